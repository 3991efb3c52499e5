//! The colours of MPI calls by kind, as data: each kind has a colour for
//! true-colour screens (the desktop viewer) and one of the xterm
//! 256-colour palette (the terminal viewer), which each viewer turns into
//! its own colour type.
//!
//! The terminal has fewer colours to tell kinds apart on dark and light
//! backgrounds alike, so it gives all collectives but barriers one
//! colour, and draws `MPI_Start*` like a send.

use analyzers::model::{classify, Class, CollKind};

/// What a call is, for colouring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// Sends (blocking, nonblocking, persistent setup).
    Send,
    /// Receives (blocking, nonblocking, persistent setup).
    Recv,
    Sendrecv,
    /// Starting persistent requests.
    Start,
    /// Waits and tests.
    Wait,
    Barrier,
    /// Collectives where everyone sends to everyone (allreduce, alltoall...).
    AllToAll,
    /// Collectives from one root to all (bcast, scatter).
    OneToAll,
    /// Collectives from all to one root (reduce, gather).
    AllToOne,
    /// Scans and other collectives.
    OtherCollective,
    /// Everything else.
    Other,
}

/// One colour in both forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Swatch {
    /// Red, green, blue.
    pub rgb: [u8; 3],
    /// Index into the xterm 256-colour palette: medium tones, readable on
    /// dark and light backgrounds.
    pub xterm: u8,
}

impl CallKind {
    /// The kind of the call named `name`.
    pub fn of(name: &str) -> CallKind {
        match classify(name) {
            Class::Send | Class::Isend | Class::SendInit => CallKind::Send,
            Class::Recv | Class::Irecv | Class::RecvInit => CallKind::Recv,
            Class::Sendrecv => CallKind::Sendrecv,
            Class::Start => CallKind::Start,
            Class::Wait => CallKind::Wait,
            Class::Coll { kind, .. } => match kind {
                CollKind::Barrier => CallKind::Barrier,
                CollKind::NxN => CallKind::AllToAll,
                CollKind::OneToN => CallKind::OneToAll,
                CollKind::NToOne => CallKind::AllToOne,
                CollKind::Scan | CollKind::Other => CallKind::OtherCollective,
            },
            Class::Other => CallKind::Other,
        }
    }

    /// The colours of this kind.
    pub const fn swatch(self) -> Swatch {
        const fn s(rgb: [u8; 3], xterm: u8) -> Swatch {
            Swatch { rgb, xterm }
        }
        match self {
            CallKind::Send => s([66, 133, 244], 33),
            CallKind::Recv => s([52, 168, 83], 37),
            CallKind::Sendrecv => s([0, 172, 193], 62),
            CallKind::Start => s([0, 172, 193], 33),
            CallKind::Wait => s([219, 68, 55], 160),
            CallKind::Barrier => s([141, 110, 99], 127),
            CallKind::AllToAll => s([244, 160, 0], 172),
            CallKind::OneToAll => s([205, 220, 57], 172),
            CallKind::AllToOne => s([171, 71, 188], 172),
            CallKind::OtherCollective => s([255, 112, 67], 172),
            CallKind::Other => s([144, 164, 174], 244),
        }
    }
}

/// The colours of call `name`.
pub fn swatch_of(name: &str) -> Swatch {
    CallKind::of(name).swatch()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_calls() {
        assert_eq!(CallKind::of("MPI_Isend"), CallKind::Send);
        assert_eq!(CallKind::of("MPI_Startall"), CallKind::Start);
        assert_eq!(CallKind::of("MPI_Barrier"), CallKind::Barrier);
        assert_eq!(CallKind::of("MPI_Allreduce"), CallKind::AllToAll);
        assert_eq!(CallKind::of("MPI_Comm_rank"), CallKind::Other);
        assert_eq!(swatch_of("MPI_Waitall"), Swatch { rgb: [219, 68, 55], xterm: 160 });
    }
}
