use pacer::redis::RedisWindowStore;
use pacer::redis::testing::{Server, ServerOptions, unique_prefix};
use pacer::{WindowGeometry, WindowStore};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PASSWORD: &str = "s3cret-Redis-pw";

fn geometry() -> WindowGeometry {
    WindowGeometry::for_limit(10, Duration::from_secs(60), 10).unwrap()
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_url_with_a_password_works_and_the_password_is_never_logged_or_shown() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let server = Server::start_with(ServerOptions {
        password: Some(PASSWORD.to_owned()),
        ..ServerOptions::default()
    });
    let store = RedisWindowStore::builder()
        .key_prefix(unique_prefix())
        .connect(&server.url())
        .await
        .expect("the password is accepted");
    let taken = store.try_take("k", geometry(), 10, 1).await.unwrap();
    assert!(taken.is_acquired());

    // A wrong password: a typed error that does not repeat either password.
    let wrong = server.url().replace(PASSWORD, "wrong-pw-9");
    let e = match RedisWindowStore::builder()
        .key_prefix(unique_prefix())
        .response_timeout(Duration::from_millis(500))
        .connect_lazy(&wrong)
    {
        Ok(store) => store
            .try_take("k", geometry(), 10, 1)
            .await
            .expect_err("a wrong password is refused")
            .to_string(),
        Err(e) => e.to_string(),
    };
    for secret in [PASSWORD, "wrong-pw-9"] {
        assert!(!e.contains(secret), "{secret} in the error: {e}");
    }
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    for secret in [PASSWORD, "wrong-pw-9"] {
        assert!(!logs.contains(secret), "{secret} in the logs:\n{logs}");
    }
    assert!(!format!("{store:?}").contains(PASSWORD), "{store:?}");
    // A fleet store on the same connection keeps the URL for its pub/sub connection: not shown
    // either.
    let fleets = pacer::redis::RedisFleetStore::on(&store);
    assert!(!format!("{fleets:?}").contains(PASSWORD), "{fleets:?}");
}

#[cfg(feature = "redis-tls")]
#[tokio::test]
async fn a_rediss_url_works_over_tls() {
    let dir = std::env::temp_dir().join(format!("pacer-tls-{}", unique_prefix().replace(':', "-")));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let status = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl to make a test certificate");
    assert!(status.success());
    let server = Server::start_with(ServerOptions {
        password: Some(PASSWORD.to_owned()),
        tls: Some((cert, key)),
        ..ServerOptions::default()
    });
    let url = server.tls_url().unwrap();
    assert!(url.starts_with("rediss://"));
    let store = RedisWindowStore::builder()
        .key_prefix(unique_prefix())
        .connection_timeout(Duration::from_secs(5))
        .response_timeout(Duration::from_secs(5))
        .connect(&url)
        .await
        .expect("a TLS connection");
    for _ in 0..10 {
        assert!(
            store
                .try_take("k", geometry(), 10, 1)
                .await
                .unwrap()
                .is_acquired()
        );
    }
    assert!(
        !store
            .try_take("k", geometry(), 10, 1)
            .await
            .unwrap()
            .is_acquired()
    );
    // Fleets over the same TLS URL: two processes count each other.
    use crate::redis_fleet::{api, eventually, members, process};
    let (api, key) = api().await;
    let (a, client_a) = process(&url).await;
    let (b, client_b) = process(&url).await;
    client_a.get(api.uri()).send().await.unwrap();
    client_b.get(api.uri()).send().await.unwrap();
    assert!(
        eventually(|| members(&a, &key) == 2 && members(&b, &key) == 2).await,
        "one fleet of two over TLS: {} {}",
        members(&a, &key),
        members(&b, &key)
    );
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}
