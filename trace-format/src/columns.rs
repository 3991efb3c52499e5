//! The columns of the events table, named once, and a typed view of a
//! record batch of it that every reader uses ([`EventColumns`]).
//!
//! A batch is looked at once: each column is found by its name and type,
//! and the string columns (`kind`, `call`; dictionary-encoded in files of
//! this tool, plain in others) are decoded to per-row keys into their
//! distinct values. Readers then ask row by row for typed values, without
//! naming columns or touching Arrow types.

use std::collections::HashMap;

use arrow_array::types::{ArrowDictionaryKeyType, Int16Type, Int32Type, Int64Type, Int8Type, UInt64Type, UInt8Type};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, DictionaryArray, PrimitiveArray, RecordBatch, StringArray};

use arrow_buffer::ArrowNativeType;

use crate::record::{flags, Kind};

/// Names of the columns of the events table (`SCHEMA.md`).
pub mod name {
    pub const RANK: &str = "rank";
    pub const THREAD: &str = "thread";
    pub const KIND: &str = "kind";
    pub const CALL: &str = "call";
    pub const T_START: &str = "t_start";
    pub const DURATION: &str = "duration";
    /// Schema 2: `t_start - t_local`.
    pub const CLOCK_OFFSET: &str = "clock_offset";
    /// Schema 1: the start on the rank's own clock.
    pub const T_LOCAL: &str = "t_local";
    pub const RC: &str = "rc";
    pub const SITE: &str = "site";
    pub const COMM: &str = "comm";
    pub const PEER: &str = "peer";
    pub const TAG: &str = "tag";
    pub const DATATYPE: &str = "datatype";
    pub const COUNT: &str = "count";
    pub const BYTES: &str = "bytes";
    pub const SEQ: &str = "seq";
    pub const REQUEST: &str = "request";
    pub const ROOT: &str = "root";
    pub const OP: &str = "op";
    pub const AUX: &str = "aux";
    pub const RECV_BYTES: &str = "recv_bytes";
    pub const RECV_DATATYPE: &str = "recv_datatype";
    pub const NEW_COMM: &str = "new_comm";
    pub const FLAGS: &str = "flags";
}

/// A column of a batch that is absent or not of the type the schema says.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ColumnError {
    #[error("column `{0}` missing")]
    Missing(&'static str),
    #[error("column `{name}` has type {found}")]
    WrongType { name: &'static str, found: String },
}

impl ColumnError {
    /// The name of the column concerned.
    pub fn column(&self) -> &'static str {
        match self {
            ColumnError::Missing(n) | ColumnError::WrongType { name: n, .. } => n,
        }
    }
}

/// A primitive column as its values and validity bits; a column absent
/// from the batch reads as all-null.
#[derive(Debug)]
pub struct Prim<'a, T: ArrowPrimitiveType> {
    values: &'a [T::Native],
    /// Validity bitmap and the bit offset of row 0; `None` if no row is null.
    valid: Option<(&'a [u8], usize)>,
}

// Not derived: a derive would ask the Arrow type marker `T` to be `Copy`.
impl<T: ArrowPrimitiveType> Clone for Prim<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: ArrowPrimitiveType> Copy for Prim<'_, T> {}

impl<'a, T: ArrowPrimitiveType> Prim<'a, T> {
    fn of(a: Option<&'a PrimitiveArray<T>>) -> Prim<'a, T> {
        match a {
            None => Prim { values: &[], valid: None },
            Some(a) => Prim {
                values: a.values(),
                valid: a.nulls().filter(|n| n.null_count() > 0).map(|n| (n.validity(), n.offset())),
            },
        }
    }

    /// The value of row `i`, `None` if it is null (or the column absent).
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<T::Native> {
        let v = *self.values.get(i)?;
        match self.valid {
            Some((bits, off)) if bits.get((off + i) >> 3).is_none_or(|b| b >> ((off + i) & 7) & 1 == 0) => None,
            _ => Some(v),
        }
    }

    /// Whether the batch has this column.
    pub fn is_present(&self) -> bool {
        !self.values.is_empty()
    }
}

/// Key of a null row in [`Strings::keys`].
pub const NULL_KEY: u32 = u32::MAX;

/// A string column (dictionary-encoded or plain) decoded once: per row a
/// key into the column's distinct values.
#[derive(Clone, Debug, Default)]
pub struct Strings<'a> {
    keys: Vec<u32>,
    values: Vec<&'a str>,
}

impl<'a> Strings<'a> {
    /// Decodes a string column; `None` if it is not one.
    pub fn of(col: &'a ArrayRef) -> Option<Strings<'a>> {
        fn dict<'a, K: ArrowDictionaryKeyType>(col: &'a ArrayRef) -> Option<Strings<'a>> {
            let d = col.as_any().downcast_ref::<DictionaryArray<K>>()?;
            let values = d.values().as_any().downcast_ref::<StringArray>()?;
            let values = (0..values.len()).map(|i| values.value(i)).collect();
            let keys = d.keys().iter().map(|k| k.map_or(NULL_KEY, num_key)).collect();
            Some(Strings { keys, values })
        }
        if let Some(s) = dict::<Int8Type>(col).or_else(|| dict::<Int16Type>(col)).or_else(|| dict::<Int32Type>(col)) {
            return Some(s);
        }
        let s = col.as_any().downcast_ref::<StringArray>()?;
        let mut index: HashMap<&'a str, u32> = HashMap::new();
        let mut values = Vec::new();
        let keys = (0..s.len())
            .map(|i| {
                if s.is_null(i) {
                    return NULL_KEY;
                }
                let v = s.value(i);
                *index.entry(v).or_insert_with(|| {
                    values.push(v);
                    values.len() as u32 - 1
                })
            })
            .collect();
        Some(Strings { keys, values })
    }

    /// The key of row `i` into [`Strings::values`]; `None` if null.
    #[inline]
    pub fn key(&self, i: usize) -> Option<u32> {
        self.keys.get(i).copied().filter(|&k| k != NULL_KEY && (k as usize) < self.values.len())
    }

    /// The distinct values (keys index this).
    pub fn values(&self) -> &[&'a str] {
        &self.values
    }

    /// The string of row `i`; `None` if null.
    pub fn get(&self, i: usize) -> Option<&'a str> {
        self.key(i).map(|k| self.values[k as usize])
    }
}

/// A dictionary key as an index (keys are never negative in valid data;
/// a negative one becomes an index no value has).
fn num_key<K: ArrowNativeType>(k: K) -> u32 {
    k.to_usize().and_then(|k| u32::try_from(k).ok()).unwrap_or(NULL_KEY)
}

/// Where the rank's own clock is found: schema 2 stores the clock offset,
/// schema 1 the local time.
#[derive(Clone, Copy, Debug)]
enum LocalClock<'a> {
    Offset(Prim<'a, Int64Type>),
    Local(Prim<'a, Int64Type>),
    Absent,
}

/// One record batch of the events table, its columns found and decoded
/// once. The columns `kind`, `call` and `t_start` must be there; any
/// other may be left out of the batch (not read) and reads as null.
#[derive(Debug)]
pub struct EventColumns<'a> {
    rows: usize,
    kind: Strings<'a>,
    /// The kind of each distinct value of `kind` (`None`: unknown).
    kind_of_value: Vec<Option<Kind>>,
    call: Strings<'a>,
    t_start: &'a [i64],
    rank: Prim<'a, Int32Type>,
    thread: Prim<'a, Int32Type>,
    duration: Prim<'a, Int64Type>,
    local: LocalClock<'a>,
    rc: Prim<'a, Int32Type>,
    site: Prim<'a, UInt64Type>,
    comm: Prim<'a, UInt64Type>,
    peer: Prim<'a, Int32Type>,
    tag: Prim<'a, Int32Type>,
    datatype: Prim<'a, Int32Type>,
    count: Prim<'a, Int64Type>,
    bytes: Prim<'a, Int64Type>,
    seq: Prim<'a, Int64Type>,
    request: Prim<'a, Int32Type>,
    root: Prim<'a, Int32Type>,
    op: Prim<'a, Int32Type>,
    aux: Prim<'a, Int32Type>,
    recv_bytes: Prim<'a, Int64Type>,
    recv_datatype: Prim<'a, Int32Type>,
    new_comm: Prim<'a, UInt64Type>,
    flags: Prim<'a, UInt8Type>,
    /// The first column of the schema (in its order) that the batch lacks
    /// or has with another type.
    first_problem: Option<ColumnError>,
}

/// Looks up a primitive column by name: `Ok(None)` if absent.
fn prim<'a, T: ArrowPrimitiveType>(
    batch: &'a RecordBatch,
    name: &'static str,
) -> Result<Option<&'a PrimitiveArray<T>>, ColumnError> {
    let Some(c) = batch.column_by_name(name) else { return Ok(None) };
    c.as_any()
        .downcast_ref::<PrimitiveArray<T>>()
        .map(Some)
        .ok_or_else(|| ColumnError::WrongType { name, found: c.data_type().to_string() })
}

impl<'a> EventColumns<'a> {
    /// Finds and decodes the columns of `batch`. Fails if `kind`, `call`
    /// or `t_start` is absent or of a wrong type; other columns that are
    /// absent or of a wrong type read as null (and are reported by
    /// [`EventColumns::check_complete`]).
    pub fn new(batch: &'a RecordBatch) -> Result<EventColumns<'a>, ColumnError> {
        let mut first_problem: Option<ColumnError> = None;
        let mut note = |e: ColumnError| {
            first_problem.get_or_insert(e);
        };
        let strings = |name: &'static str| -> Result<Strings<'a>, ColumnError> {
            let c = batch.column_by_name(name).ok_or(ColumnError::Missing(name))?;
            Strings::of(c).ok_or_else(|| ColumnError::WrongType { name, found: c.data_type().to_string() })
        };
        macro_rules! optional {
            ($name:expr) => {{
                match prim(batch, $name) {
                    Ok(Some(a)) => Prim::of(Some(a)),
                    Ok(None) => {
                        note(ColumnError::Missing($name));
                        Prim::of(None)
                    }
                    Err(e) => {
                        note(e);
                        Prim::of(None)
                    }
                }
            }};
        }
        // In the order of the schema, so the problem reported first is the
        // first column of the file that is wrong.
        let rank = optional!(name::RANK);
        let thread = optional!(name::THREAD);
        let kind = strings(name::KIND)?;
        let call = strings(name::CALL)?;
        let t_start = prim::<Int64Type>(batch, name::T_START)?.ok_or(ColumnError::Missing(name::T_START))?.values();
        let duration = optional!(name::DURATION);
        let local = match (prim::<Int64Type>(batch, name::CLOCK_OFFSET), prim::<Int64Type>(batch, name::T_LOCAL)) {
            (Ok(Some(off)), _) => LocalClock::Offset(Prim::of(Some(off))),
            (_, Ok(Some(local))) => LocalClock::Local(Prim::of(Some(local))),
            (_, Err(e)) => {
                note(e);
                LocalClock::Absent
            }
            (_, Ok(None)) => {
                note(ColumnError::Missing(name::T_LOCAL));
                LocalClock::Absent
            }
        };
        let cols = EventColumns {
            rows: batch.num_rows(),
            kind_of_value: kind.values().iter().map(|s| Kind::from_name(s)).collect(),
            kind,
            call,
            t_start,
            rank,
            thread,
            duration,
            local,
            rc: optional!(name::RC),
            site: optional!(name::SITE),
            comm: optional!(name::COMM),
            peer: optional!(name::PEER),
            tag: optional!(name::TAG),
            datatype: optional!(name::DATATYPE),
            count: optional!(name::COUNT),
            bytes: optional!(name::BYTES),
            seq: optional!(name::SEQ),
            request: optional!(name::REQUEST),
            root: optional!(name::ROOT),
            op: optional!(name::OP),
            aux: optional!(name::AUX),
            recv_bytes: optional!(name::RECV_BYTES),
            recv_datatype: optional!(name::RECV_DATATYPE),
            new_comm: optional!(name::NEW_COMM),
            flags: optional!(name::FLAGS),
            first_problem: None,
        };
        Ok(EventColumns { first_problem, ..cols })
    }

    /// Fails with the first column of the schema the batch lacks or has
    /// with another type (readers of whole events need every column).
    pub fn check_complete(&self) -> Result<(), ColumnError> {
        self.first_problem.clone().map_or(Ok(()), Err)
    }

    pub fn num_rows(&self) -> usize {
        self.rows
    }

    /// The kind of row `i`; `None` if null or unknown.
    #[inline]
    pub fn kind(&self, i: usize) -> Option<Kind> {
        self.kind.key(i).and_then(|k| self.kind_of_value[k as usize])
    }

    /// The text of the `kind` column at row `i` (to report unknown kinds).
    pub fn kind_text(&self, i: usize) -> Option<&'a str> {
        self.kind.get(i)
    }

    /// The `call` column: per row a key into its distinct names, so a
    /// reader maps each name once per batch.
    pub fn call(&self) -> &Strings<'a> {
        &self.call
    }

    #[inline]
    pub fn t_start(&self, i: usize) -> i64 {
        self.t_start[i]
    }

    /// End on the reference clock; `None` while the call was in progress
    /// when the process died.
    #[inline]
    pub fn t_end(&self, i: usize) -> Option<i64> {
        self.duration.get(i).map(|d| self.t_start[i] + d)
    }

    /// Start on the rank's own clock (from either schema); `None` if the
    /// batch has neither column.
    pub fn t_local(&self, i: usize) -> Option<i64> {
        match self.local {
            LocalClock::Offset(off) => off.get(i).map(|o| self.t_start[i] - o),
            LocalClock::Local(local) => local.get(i),
            LocalClock::Absent => None,
        }
    }

    /// The rank column (`None` if absent).
    pub fn rank(&self, i: usize) -> Option<i32> {
        self.rank.get(i)
    }

    /// The thread of row `i` (0 if unknown).
    #[inline]
    pub fn thread(&self, i: usize) -> i32 {
        self.thread.get(i).unwrap_or(0)
    }

    /// The record flags of row `i` (a row without them is a finished call).
    #[inline]
    pub fn flags(&self, i: usize) -> u8 {
        self.flags.get(i).unwrap_or(flags::DONE)
    }

    /// Whether the batch has the flags column.
    pub fn has_flags(&self) -> bool {
        self.flags.is_present()
    }
}

macro_rules! optional_getters {
    ($($(#[$doc:meta])* $f:ident: $t:ty),* $(,)?) => {
        impl EventColumns<'_> {
            $(
                $(#[$doc])*
                #[inline]
                pub fn $f(&self, i: usize) -> Option<$t> {
                    self.$f.get(i)
                }
            )*
        }
    };
}

optional_getters!(
    /// Return code; `None` for a call that did not return.
    rc: i32,
    site: u64,
    comm: u64,
    peer: i32,
    tag: i32,
    datatype: i32,
    count: i64,
    bytes: i64,
    seq: i64,
    request: i32,
    root: i32,
    op: i32,
    aux: i32,
    recv_bytes: i64,
    recv_datatype: i32,
    new_comm: u64,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Event;
    use std::sync::Arc;

    fn event(kind: Kind, call: &str, t: i64, end: Option<i64>) -> Event {
        Event {
            rank: 3,
            thread: 1,
            kind,
            call: Arc::from(call),
            t_start: t,
            t_end: end,
            t_local: t - 7,
            rc: end.map(|_| 0),
            site: Some(0x40),
            comm: None,
            peer: Some(2),
            tag: None,
            datatype: None,
            count: None,
            bytes: Some(8),
            seq: None,
            request: None,
            root: None,
            op: None,
            aux: None,
            recv_bytes: None,
            recv_datatype: None,
            new_comm: None,
            flags: 1,
        }
    }

    #[test]
    fn typed_getters_read_what_was_written() {
        let events = vec![
            event(Kind::Call, "MPI_Send", 100, Some(150)),
            event(Kind::Completion, "MPI_Irecv", 200, Some(200)),
            event(Kind::Call, "MPI_Send", 300, None),
        ];
        let batch = crate::table::events_batch(&events).unwrap();
        let c = EventColumns::new(&batch).unwrap();
        assert!(c.check_complete().is_ok());
        assert_eq!(c.num_rows(), 3);
        assert_eq!(c.kind(1), Some(Kind::Completion));
        assert_eq!(c.call().values(), &["MPI_Send", "MPI_Irecv"]);
        assert_eq!(c.call().key(2), Some(0));
        assert_eq!(c.t_end(0), Some(150));
        assert_eq!(c.t_end(2), None);
        assert_eq!(c.t_local(0), Some(93));
        assert_eq!((c.rank(0), c.thread(0), c.peer(0), c.tag(0), c.bytes(2)), (Some(3), 1, Some(2), None, Some(8)));
    }

    #[test]
    fn absent_columns_read_as_null_and_are_reported() {
        let events = vec![event(Kind::Call, "MPI_Send", 100, Some(150))];
        let batch = crate::table::events_batch(&events).unwrap();
        let keep: Vec<usize> =
            ["kind", "call", "t_start", "duration"].iter().map(|n| batch.schema().index_of(n).unwrap()).collect();
        let part = batch.project(&keep).unwrap();
        let c = EventColumns::new(&part).unwrap();
        assert_eq!(c.check_complete(), Err(ColumnError::Missing("rank")));
        assert_eq!((c.t_end(0), c.rc(0), c.thread(0), c.flags(0)), (Some(150), None, 0, flags::DONE));
        let no_kind = batch.project(&[batch.schema().index_of("call").unwrap()]).unwrap();
        assert_eq!(EventColumns::new(&no_kind).err(), Some(ColumnError::Missing("kind")));
    }
}
