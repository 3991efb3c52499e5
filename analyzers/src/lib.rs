//! Placeholder; see issue 7.
