//! The PMI wire formats, written once for both ends: mpi-core's PMI client
//! (`rt/pmi.rs`, which talks to this project's `mpirun`, MPICH's hydra or
//! Slurm) and the launcher's PMI server (`launcher/src/pmi.rs`, which MPICH
//! programs talk to as well).
//!
//! Three message forms travel on a PMI connection:
//!
//! * PMI-1 lines: `cmd=<name> key=value key=value\n`. Words are separated by
//!   blanks; a backslash escapes the next character (newer MPICH clients
//!   escape blanks in values that way), and values are kept verbatim,
//!   escapes included, so what one client puts is exactly what another gets.
//!   See [`Message::to_v1_line`] and [`Message::parse_v1_line`].
//! * PMI-1 multi-line commands: `mcmd=spawn\n`, one `key=value` line each,
//!   `endcmd\n` (one such segment per program of a spawn request, see
//!   [`SpawnSegment`]). See [`Message::to_mcmd`] and [`Message::parse_mcmd`].
//! * PMI-2 messages: a 6-character length, left-justified and padded with
//!   blanks, then `cmd=<name>;key=value;...;`, where a `;` inside a value is
//!   written twice. See [`Message::to_v2`] and [`Message::parse_v2_body`].
//!
//! A connection starts in PMI-1; the `init` line says which version the
//! client wants ([`init_request`]), and after a PMI-2 `init` both ends speak
//! PMI-2 messages. The server cuts its input into messages with
//! [`take_frame`]; the client reads whole lines or a length and a body.
//!
//! Decoding never panics: malformed input is a [`DecodeError`].

mod mapping;
mod message;
mod spawn;

pub use mapping::{format_process_mapping, parse_process_mapping};
pub use message::{
    init_request, init_response, parse_v2_length, take_frame, unescape_v1, v2_response_name, DecodeError, Frame,
    Message, Wire, MAX_MESSAGE, V2_LENGTH_WIDTH,
};
pub use spawn::SpawnSegment;

/// Longest key-value space name (announced by `get_maxes`).
pub const KVSNAME_MAX: usize = 256;
/// Longest key a client may use (announced by `get_maxes`).
pub const KEYLEN_MAX: usize = 64;
/// Longest value a client may use (announced by `get_maxes`).
pub const VALLEN_MAX: usize = 1024;
