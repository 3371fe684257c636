//! The tokio runtime that `serve` and `live` run on: the commands are synchronous at the top
//! (`cli::execute` returns what to print), async inside.

use crate::SimError;

/// A multi-threaded tokio runtime with the I/O and time drivers.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, SimError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| SimError::Io(format!("cannot start the async runtime: {e}")))
}
