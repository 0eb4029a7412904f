//! Who may speak in a run: a per-run secret, and hellos that prove it.
//!
//! The supervisor draws a [`Secret`] from the operating system's random source for
//! every run and hands it to each worker on its control link (a socket pair inherited
//! at spawn, never the command line, which any user can read in `/proc`). A worker's
//! mesh socket lives in the private run directory, but that alone keeps out only other
//! users: a process of the same user (a stray test, another run, a student's worker
//! pointed at the wrong directory) could still connect. So every mesh connection opens
//! with a [`Hello`] whose proof is HMAC-SHA256 under the secret of who is calling, whom,
//! and as which incarnation. Checking is constant-time.
//!
//! The proof binds the receiver and the incarnation, so it cannot be redirected to
//! another worker or reused by a later life of the same one; and a receiver adopts at
//! most one channel per life of each peer, so a hello replayed on a second connection
//! is refused (seeing the bytes of a hello at all takes the privileges that could read
//! the secret from the worker's memory). Which lives to believe is a separate question,
//! answered by the supervisor (see `runtime`).

use std::fmt;

use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};

use crate::algorithm::PeerId;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// Bytes in a secret.
pub const SECRET_LEN: usize = 32;
/// Bytes in a proof (an HMAC-SHA256).
pub const PROOF_LEN: usize = 32;

/// Labels that keep a proof made for one purpose from passing for another.
const MESH_HELLO: &[u8] = b"mutexlab mesh hello v1";

/// The run's shared secret. Its `Debug` never shows the bytes.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Secret([u8; SECRET_LEN]);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(…)")
    }
}

impl Secret {
    /// A fresh secret from the operating system's random source.
    pub fn generate() -> std::io::Result<Secret> {
        let mut bytes = [0u8; SECRET_LEN];
        getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
        Ok(Secret(bytes))
    }

    /// A secret with the given bytes (tests, and tools that play a part in a run).
    pub fn from_bytes(bytes: [u8; SECRET_LEN]) -> Secret {
        Secret(bytes)
    }

    fn mac(&self) -> HmacSha256 {
        <HmacSha256 as KeyInit>::new_from_slice(&self.0).expect("HMAC takes a key of any length")
    }
}

/// The first frame on every mesh connection: who is calling, whom, as which life, and
/// the proof that the caller holds the run's secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The caller's id.
    pub from: PeerId,
    /// The worker the caller meant to reach.
    pub to: PeerId,
    /// The caller's incarnation: 0 at first, one more each time it is restarted.
    pub incarnation: u32,
    /// HMAC-SHA256 under the run's secret of the fields above.
    pub proof: [u8; PROOF_LEN],
}

impl Hello {
    /// The hello `from`, as `incarnation`, sends `to`.
    pub fn new(secret: &Secret, from: PeerId, to: PeerId, incarnation: u32) -> Hello {
        let proof = mesh_mac(secret, from, to, incarnation).finalize().into_bytes().into();
        Hello { from, to, incarnation, proof }
    }

    /// Whether this hello was made with the run's secret (constant time).
    pub fn proves(&self, secret: &Secret) -> bool {
        mesh_mac(secret, self.from, self.to, self.incarnation).verify_slice(&self.proof).is_ok()
    }
}

fn mesh_mac(secret: &Secret, from: PeerId, to: PeerId, incarnation: u32) -> HmacSha256 {
    let mut mac = secret.mac();
    mac.update(MESH_HELLO);
    mac.update(&from.0.to_be_bytes());
    mac.update(&to.0.to_be_bytes());
    mac.update(&incarnation.to_be_bytes());
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_proves_only_what_it_was_made_for() {
        let secret = Secret::generate().unwrap();
        let h = Hello::new(&secret, PeerId(1), PeerId(3), 2);
        assert!(h.proves(&secret));
        // Another secret, or any field changed: no proof.
        assert!(!h.proves(&Secret::generate().unwrap()));
        for forged in [
            Hello { from: PeerId(0), ..h.clone() },
            Hello { to: PeerId(2), ..h.clone() },
            Hello { incarnation: 3, ..h.clone() },
            Hello { proof: [0; PROOF_LEN], ..h.clone() },
        ] {
            assert!(!forged.proves(&secret), "{forged:?}");
        }
    }

    #[test]
    fn secrets_are_fresh_and_never_print() {
        assert_ne!(Secret::generate().unwrap(), Secret::generate().unwrap());
        assert_eq!(format!("{:?}", Secret::from_bytes([7; SECRET_LEN])), "Secret(…)");
    }
}
