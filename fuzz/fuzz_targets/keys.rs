//! Key files and public key lines from disk or from a peer. Invariants: nothing panics;
//! whatever parses writes back to the same thing (so nothing is silently dropped or altered
//! between reading and saving).
//!
//! `scripts/fuzz 60 keys`

#![no_main]

use agentfw_core::seal::{DeviceKeys, PublicBundle, Rotation};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(keys) = DeviceKeys::from_key_file(bytes) {
        let again = DeviceKeys::from_key_file(keys.to_key_file().as_bytes()).expect("a written key file reads back");
        assert!(again.public() == keys.public(), "the public half changed on a round trip");
        assert_eq!(again.created(), keys.created());
        assert_eq!(again.supersedes(), keys.supersedes());
    }
    if let Ok(bundle) = PublicBundle::from_bytes(bytes) {
        assert!(PublicBundle::parse(&bundle.to_line()).ok() == Some(bundle), "a bundle line does not read back");
    }
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    if let Ok(bundle) = PublicBundle::parse(text) {
        assert!(PublicBundle::parse(&bundle.to_line()).ok() == Some(bundle), "a bundle line does not read back");
    }
    if let Ok(rotation) = Rotation::parse(text) {
        assert!(Rotation::parse(&rotation.to_line()).ok() == Some(rotation), "a rotation line does not read back");
    }
});
