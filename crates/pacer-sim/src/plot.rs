//! The plot: each mode's summed limiter rate and accepted units per minute against the hidden
//! quota, over time, from the runs themselves (the .NET adaptive limiter's saw-tooth sketch, with real numbers).
//!
//! One panel per run: a column per story, a row per mode, all on the same scales so that panels
//! compare at a glance. Drawn with `plotters`' SVG backend and its built-in text layout (no system
//! fonts are read), so the same comparison gives the same file.

use crate::report::thousands;
use crate::{Comparison, Row, SimError};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Width of one panel, pixels.
const PANEL_WIDTH: u32 = 760;
/// Height of one panel, pixels.
const PANEL_HEIGHT: u32 = 240;
/// Height of the title band, pixels.
const TITLE_HEIGHT: u32 = 52;

const QUOTA_COLOUR: RGBColor = RGBColor(40, 40, 40);
const RATE_COLOUR: RGBColor = RGBColor(31, 119, 180);
const ACCEPTED_COLOUR: RGBColor = RGBColor(230, 120, 20);

fn plot_error(e: impl std::fmt::Display) -> SimError {
    SimError::Plot(format!("cannot draw the plot: {e}"))
}

/// Checks, before a run, that the plot can be written to `path`: opens it for writing, creating
/// it if need be (and removing what it created), so that a bad `--plot` is refused before the run
/// rather than after it.
///
/// # Errors
/// [`SimError::Plot`] naming the path and why (no such directory, not writable, a directory).
pub fn check_writable(path: &Path) -> Result<(), SimError> {
    let cannot = |e: &dyn std::fmt::Display| {
        SimError::Plot(format!(
            "--plot {}: cannot write the plot there: {e}",
            path.display()
        ))
    };
    if path.is_dir() {
        return Err(cannot(&"it is a directory"));
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| cannot(&e))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Draws `c` into `path` once the run is done; `output` is what the run prints. If the plot
/// cannot be drawn or written, the error keeps the output so that it is printed anyway
/// ([`SimError::PlotAfterRun`]).
///
/// # Errors
/// [`SimError::PlotAfterRun`], with `output` and the reason.
pub fn write_after_run(c: &Comparison, path: &Path, output: String) -> Result<String, SimError> {
    let written = svg(c).and_then(|svg| {
        std::fs::write(path, svg)
            .map_err(|e| SimError::Plot(format!("cannot write {}: {e}", path.display())))
    });
    match written {
        Ok(()) => Ok(output),
        Err(e) => Err(SimError::PlotAfterRun {
            output,
            message: e.to_string(),
        }),
    }
}

/// The comparison as an SVG document.
pub fn svg(c: &Comparison) -> Result<String, SimError> {
    let mut stories: Vec<&str> = c.rows.iter().map(|r| r.story.as_str()).collect();
    stories.dedup();
    let columns = stories.len().max(1);
    let rows = c.rows.len().div_ceil(columns).max(1);
    let width = PANEL_WIDTH * columns as u32;
    let height = TITLE_HEIGHT + PANEL_HEIGHT * rows as u32;
    let y_max = c
        .rows
        .iter()
        .flat_map(|r| {
            let rate = r.series.rate.iter().flatten().copied();
            let quota = r.series.quota.iter().copied();
            let accepted = r.series.accepted_per_minute().into_iter().map(|a| a as f64);
            rate.chain(quota).chain(accepted)
        })
        .fold(1.0f64, f64::max)
        * 1.1;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let (title, body) = root.split_vertically(TITLE_HEIGHT);
        let o = &c.options;
        let settings = format!(
            "quota {} units/min · {} instances × {} units/min · {} min · seed {}",
            thousands(o.quota),
            o.instances,
            thousands(o.demand.round() as u64),
            o.minutes,
            o.seed
        );
        let font = ("sans-serif", 14).into_font().color(&BLACK);
        title
            .draw_text("Units per minute against the hidden quota", &font, (12, 6))
            .map_err(plot_error)?;
        title
            .draw_text(&settings, &font, (12, 24))
            .map_err(plot_error)?;
        legend(&title, width)?;
        let panels = body.split_evenly((rows, columns));
        for (story_index, story) in stories.iter().enumerate() {
            let story_rows = c.rows.iter().filter(|r| r.story == *story);
            for (mode_index, row) in story_rows.enumerate() {
                let area = &panels[mode_index * columns + story_index];
                panel(area, row, f64::from(o.minutes), y_max)?;
            }
        }
        root.present().map_err(plot_error)?;
    }
    Ok(out)
}

/// One run: the quota, the summed limiter rate (when the mode has a limiter) and the accepted
/// units of the last 60 s, each second.
fn panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    row: &Row,
    minutes: f64,
    y_max: f64,
) -> Result<(), SimError> {
    let m = &row.metrics;
    let caption = format!(
        "{} · {} — {:.0}% of quota, {} × 429, {} rejected",
        row.mode,
        row.story,
        m.share * 100.0,
        thousands(m.throttled),
        thousands(m.rejected)
    );
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 15))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(52)
        .build_cartesian_2d(0f64..minutes, 0f64..y_max)
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .x_desc("minute")
        .y_desc("units/min")
        // At most one label a minute: a whole minute's label on every tick (a run of two
        // minutes labelled in quarters read 0, 0, 0, 1, …).
        .x_labels((minutes.round() as usize + 1).clamp(2, 16))
        .y_labels(8)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| thousands(y.round() as u64))
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(225, 225, 225))
        .label_style(("sans-serif", 11))
        .draw()
        .map_err(plot_error)?;
    let at = |s: usize| s as f64 / 60.0;
    let s = &row.series;
    chart
        .draw_series(LineSeries::new(
            s.quota.iter().enumerate().map(|(i, &q)| (at(i), q)),
            QUOTA_COLOUR.stroke_width(2),
        ))
        .map_err(plot_error)?;
    if s.rate.iter().any(Option::is_some) {
        chart
            .draw_series(LineSeries::new(
                s.rate
                    .iter()
                    .enumerate()
                    .filter_map(|(i, r)| r.map(|r| (at(i), r))),
                RATE_COLOUR.stroke_width(1),
            ))
            .map_err(plot_error)?;
    }
    chart
        .draw_series(LineSeries::new(
            s.accepted_per_minute()
                .into_iter()
                .enumerate()
                .map(|(i, a)| (at(i + 1), a as f64)),
            ACCEPTED_COLOUR.stroke_width(2),
        ))
        .map_err(plot_error)?;
    Ok(())
}

/// One legend for every panel, at the right of the title band.
fn legend(area: &DrawingArea<SVGBackend<'_>, Shift>, width: u32) -> Result<(), SimError> {
    let items = [
        ("hidden quota", QUOTA_COLOUR.stroke_width(2)),
        ("sum of limiter rates", RATE_COLOUR.stroke_width(2)),
        ("accepted, last 60 s", ACCEPTED_COLOUR.stroke_width(2)),
    ];
    let font = ("sans-serif", 13).into_font().color(&BLACK);
    let x = i32::try_from(width).unwrap_or(i32::MAX) - 190;
    for (i, (label, style)) in items.iter().enumerate() {
        let y = 8 + 13 * i32::try_from(i).unwrap_or(0);
        area.draw(&PathElement::new(vec![(x, y + 6), (x + 24, y + 6)], *style))
            .map_err(plot_error)?;
        area.draw_text(label, &font, (x + 30, y))
            .map_err(plot_error)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SimOptions, Story, compare, mode_by_name};

    #[test]
    fn draws_one_panel_per_run_with_the_three_lines() {
        let options = SimOptions {
            minutes: 2,
            ..SimOptions::default()
        };
        let stories = [Story::by_name("free-run").unwrap()];
        let modes = [mode_by_name("none").unwrap(), mode_by_name("aimd").unwrap()];
        let c = compare(&options, &stories, &modes).unwrap();
        let svg = svg(&c).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("none · free-run"));
        assert!(svg.contains("aimd · free-run"));
        assert_eq!(svg.matches("\nhidden quota\n").count(), 1, "one legend");
        // The rate's colour: aimd's line and the legend's sample; none has no limiter.
        assert_eq!(svg.matches("stroke=\"#1F77B4\"").count(), 2);
        assert_eq!(svg, super::svg(&c).unwrap(), "deterministic");
    }

    #[test]
    fn bad_plot_path_is_refused_before_the_run() {
        let dir = std::env::temp_dir().join(format!("pacer-sim-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = check_writable(&dir.join("no-such-dir/plot.svg"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--plot ") && e.contains("no-such-dir/plot.svg"),
            "{e}"
        );
        assert!(e.contains("cannot write the plot there"), "{e}");
        let e = check_writable(&dir).unwrap_err().to_string();
        assert!(e.contains("it is a directory"), "{e}");
        let fine = dir.join("fine.svg");
        check_writable(&fine).unwrap();
        assert!(!fine.exists(), "the check leaves no file behind");
    }

    #[test]
    fn bad_plot_path_at_the_end_keeps_the_results() {
        let options = SimOptions {
            minutes: 1,
            ..SimOptions::default()
        };
        let stories = [Story::by_name("free-run").unwrap()];
        let c = compare(&options, &stories, &[mode_by_name("none").unwrap()]).unwrap();
        let dir = std::env::temp_dir().join(format!("pacer-sim-plot-late-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("plot.svg");
        check_writable(&path).unwrap();
        // The directory goes away during the run.
        std::fs::remove_dir_all(&dir).unwrap();
        match write_after_run(&c, &path, "the table".to_owned()) {
            Err(SimError::PlotAfterRun { output, message }) => {
                assert_eq!(output, "the table");
                assert!(message.contains("cannot write"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
