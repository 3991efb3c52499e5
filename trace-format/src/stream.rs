//! Streaming access to an events file, for analyses of large traces: one
//! Arrow record batch at a time (row group by row group), only the columns
//! asked for, so memory stays bounded by the batch size.
//!
//! Added for the analyzers (issue 7); [`crate::table::read_events`] remains
//! the way to get whole [`crate::Event`]s.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReader;
use parquet::arrow::ProjectionMask;

use crate::meta::{RankMeta, RANK_META_KEY};
use crate::table::SCHEMA_VERSION_KEY;
use crate::Error;

/// Events files opened by [`event_batches`] in this process.
static OPENED: AtomicU64 = AtomicU64::new(0);

/// How many events files this process has opened for streaming: lets a
/// test tell how many times a trace was read.
pub fn files_opened() -> u64 {
    OPENED.load(Ordering::Relaxed)
}

/// The record batches of one events file.
pub struct EventBatches {
    reader: ParquetRecordBatchReader,
    path: PathBuf,
    /// Rank metadata from the footer, if present and readable.
    pub rank_meta: Option<RankMeta>,
    /// Schema version from the footer, if present.
    pub schema_version: Option<u32>,
    /// Number of rows the footer announces.
    pub rows: i64,
    /// Size of the file in bytes.
    pub file_len: u64,
    failed: bool,
}

/// Opens `path` for streaming `columns` (names of the events schema; names
/// absent from the file are simply not returned) in batches of `batch_size`.
pub fn event_batches(path: &Path, columns: &[&str], batch_size: usize) -> Result<EventBatches, Error> {
    let pq = |e: parquet::errors::ParquetError| Error::Parquet { path: path.to_path_buf(), what: e.to_string() };
    let builder = crate::table::open_parquet(path)?;
    let file_len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    OPENED.fetch_add(1, Ordering::Relaxed);
    let kv = builder.metadata().file_metadata().key_value_metadata();
    let get = |key: &str| kv.and_then(|kv| kv.iter().find(|k| k.key == key)).and_then(|k| k.value.clone());
    let rank_meta = get(RANK_META_KEY).and_then(|v| serde_json::from_str(&v).ok());
    let schema_version = get(SCHEMA_VERSION_KEY).and_then(|v| v.parse().ok());
    let rows = builder.metadata().file_metadata().num_rows();
    let mask = ProjectionMask::columns(builder.parquet_schema(), columns.iter().copied());
    let reader = crate::table::guarded(path, || {
        builder.with_projection(mask).with_batch_size(batch_size.max(1)).build().map_err(pq)
    })?;
    Ok(EventBatches { reader, path: path.to_path_buf(), rank_meta, schema_version, rows, file_len, failed: false })
}

/// [`event_batches`] of the events file of `rank`: the rank its footer
/// says it holds must be `rank` (a file copied over another rank's is left
/// out, not shown as that rank).
pub fn rank_batches(path: &Path, rank: i32, columns: &[&str], batch_size: usize) -> Result<EventBatches, Error> {
    let b = event_batches(path, columns, batch_size)?;
    if let Some(m) = &b.rank_meta {
        crate::inventory::check_rank(path, rank, m.process.rank, "its footer")?;
    }
    Ok(b)
}

impl EventBatches {
    /// Rows worth reserving room for: the announced rows, but no more than
    /// a few per byte of the file (room is reserved before a row is read,
    /// and under a limit of address space even untouched room counts).
    pub fn rows_to_reserve(&self) -> usize {
        (self.rows.max(0) as u64).min(self.file_len.saturating_mul(4)) as usize
    }
}

impl Iterator for EventBatches {
    type Item = Result<RecordBatch, Error>;

    /// The next batch; after an error (a damaged row group) the iteration ends.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let reader = &mut self.reader;
        match crate::table::guarded(&self.path, || Ok(reader.next())) {
            Ok(None) => None,
            Ok(Some(Ok(b))) => Some(Ok(b)),
            Ok(Some(Err(e))) => {
                self.failed = true;
                Some(Err(Error::Parquet { path: self.path.clone(), what: e.to_string() }))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}
