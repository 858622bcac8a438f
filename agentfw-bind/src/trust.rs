//! The trust file (TR1, DL4) as the bindings give it to a firewall: its text or its path,
//! parsed by the core into the [`Trust`] that `AdminAction::SetTrust` applies, so a bare
//! `Firewall` refuses blocked and unknown senders on send and on delivery like the daemon.
//!
//! A file with errors is an error here (`trust.invalid`, every diagnostic in the message)
//! and the firewall keeps the trust it had: a typo never lifts a block.

use std::path::Path;

use agentfw_core::firewall::{AdminAction, Input};
use agentfw_core::policy::SourceFile;
use agentfw_core::trust::{Trust, TrustFile};

use crate::error::Failure;
use crate::load::ReadError;

/// The name a trust file given as text goes by in diagnostics when the caller names none.
pub const DEFAULT_NAME: &str = "trust.yaml";

/// The input that applies a trust file given as text, named `name` in diagnostics;
/// `None` unsets it (nobody is refused on its account, deliveries carry no overlay).
pub fn text(name: Option<&str>, text: Option<String>) -> Result<Input, Failure> {
    let trust = match text {
        None => Trust::Unset,
        Some(text) => Trust::File(TrustFile::parse(&SourceFile::new(name.unwrap_or(DEFAULT_NAME), text))?),
    };
    Ok(Input::Admin(AdminAction::SetTrust { trust }))
}

/// The input that applies the trust file at `path`.
pub fn file(path: &Path) -> Result<Input, Failure> {
    let text = std::fs::read_to_string(path).map_err(|source| ReadError::Io { path: path.to_owned(), source })?;
    self::text(Some(&path.display().to_string()), Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trust(input: Input) -> Option<Trust> {
        match input {
            Input::Admin(AdminAction::SetTrust { trust }) => Some(trust),
            _ => None,
        }
    }

    #[test]
    fn text_parses_unsets_and_reports_errors_with_a_stable_code() -> Result<(), Failure> {
        assert_eq!(trust(text(None, None)?), Some(Trust::Unset));
        let Some(Trust::File(file)) = trust(text(None, Some("version: 1\nblocked: [web (claude)]\n".into()))?) else {
            return Err(Failure::Input("not a file".into()));
        };
        assert!(file.is_blocked("web (claude)"));
        let err = text(Some("t.yaml"), Some("version: 1\nblokced: []\n".into())).err();
        assert_eq!(err.as_ref().map(Failure::code), Some("trust.invalid"));
        let message = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("t.yaml") && message.contains("blokced"), "{message}");
        let unnamed = text(None, Some("version: 2\n".into())).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(unnamed.contains(DEFAULT_NAME), "{unnamed}");
        Ok(())
    }

    #[test]
    fn a_missing_file_is_a_read_error_naming_it() {
        let err = file(Path::new("no/such/trust.yaml")).err();
        assert_eq!(err.as_ref().map(Failure::code), Some("io.read"));
        let message = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("no/such/trust.yaml"), "{message}");
    }
}
