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
const AGENT_HELLO: &[u8] = b"mutexlab agent hello v1";

/// The run's shared secret. Its `Debug` never shows the bytes.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Secret([u8; SECRET_LEN]);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// `N` fresh bytes from the operating system's random source (secrets, nonces, tokens).
pub fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    Ok(bytes)
}

/// `bytes` as lowercase hex digits, two a byte.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Secret {
    /// A fresh secret from the operating system's random source.
    pub fn generate() -> std::io::Result<Secret> {
        random_bytes().map(Secret)
    }

    /// A secret with the given bytes (tests, and tools that play a part in a run).
    pub fn from_bytes(bytes: [u8; SECRET_LEN]) -> Secret {
        Secret(bytes)
    }

    /// The secret written as 64 hex digits (what `--secret-file` holds; surrounding
    /// white space is ignored), or why not in one line.
    pub fn from_hex(text: &str) -> Result<Secret, String> {
        let text = text.trim();
        if text.len() != 2 * SECRET_LEN || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("a secret is {} hex digits; this is not", 2 * SECRET_LEN));
        }
        let mut bytes = [0u8; SECRET_LEN];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
        }
        Ok(Secret(bytes))
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

/// An agent's proof that it holds `secret`: an HMAC of the supervisor's fresh `nonce`
/// and the slots it offers, so a proof seen once is no use on another connection.
pub fn agent_proof(secret: &Secret, nonce: &[u8; 32], slots: u32) -> [u8; PROOF_LEN] {
    agent_mac(secret, nonce, slots).finalize().into_bytes().into()
}

/// Whether `proof` is [`agent_proof`] of `nonce` and `slots` under `secret` (constant time).
pub fn agent_proves(secret: &Secret, nonce: &[u8; 32], slots: u32, proof: &[u8; PROOF_LEN]) -> bool {
    agent_mac(secret, nonce, slots).verify_slice(proof).is_ok()
}

fn agent_mac(secret: &Secret, nonce: &[u8; 32], slots: u32) -> HmacSha256 {
    let mut mac = secret.mac();
    mac.update(AGENT_HELLO);
    mac.update(nonce);
    mac.update(&slots.to_be_bytes());
    mac
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
    fn an_agents_proof_binds_the_nonce_and_slots_and_a_secret_reads_from_hex() {
        let secret = Secret::from_hex(&format!("{}\n", "0f".repeat(SECRET_LEN))).unwrap();
        assert_eq!(secret, Secret::from_bytes([0x0f; SECRET_LEN]));
        let proof = agent_proof(&secret, &[1; 32], 4);
        assert!(agent_proves(&secret, &[1; 32], 4, &proof));
        assert!(!agent_proves(&secret, &[2; 32], 4, &proof), "another nonce");
        assert!(!agent_proves(&secret, &[1; 32], 5, &proof), "other slots");
        assert!(!agent_proves(&Secret::generate().unwrap(), &[1; 32], 4, &proof));
        // The mesh's hello and the agent's are not interchangeable.
        let hello = Hello::new(&secret, PeerId(0), PeerId(1), 0);
        assert_ne!(hello.proof, proof);
        for bad in ["", "0f", &"zz".repeat(SECRET_LEN), &"0f".repeat(SECRET_LEN + 1)] {
            assert!(Secret::from_hex(bad).unwrap_err().starts_with("a secret is 64 hex digits"), "{bad}");
        }
    }

    #[test]
    fn secrets_are_fresh_and_never_print() {
        assert_ne!(Secret::generate().unwrap(), Secret::generate().unwrap());
        assert_eq!(format!("{:?}", Secret::from_bytes([7; SECRET_LEN])), "Secret(…)");
    }
}
