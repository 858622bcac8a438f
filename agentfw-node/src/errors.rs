//! Binding failures to JavaScript errors whose `code` is the stable code of
//! `agentfw_bind::Failure`.

pub use agentfw_bind::Failure;

/// What a call returns: the value, or an error whose `code` is the core's stable code.
pub type Result<T> = napi::Result<T, String>;

/// The failure as a JavaScript error.
fn error(failure: Failure) -> napi::Error<String> {
    napi::Error::new(failure.code().to_owned(), failure.to_string())
}

/// Runs `f`, turning a failure or a panic into a JavaScript error with a code.
pub fn guard<T>(f: impl FnOnce() -> std::result::Result<T, Failure>) -> Result<T> {
    agentfw_bind::catch(f).map_err(error)
}
