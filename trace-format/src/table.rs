//! Arrow schemas of the events and communicators tables and their Parquet
//! files (zstd, delta-encoded times, dictionary-encoded small columns).

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Int32Builder, Int64Builder, ListBuilder, StringBuilder, StringDictionaryBuilder, UInt64Builder,
    UInt8Builder,
};
use arrow_array::types::{Int16Type, Int32Type, Int8Type, UInt64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, ListArray, PrimitiveArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::columns::{name, ColumnError, EventColumns, Strings};
use crate::events::Event;
use crate::meta::{RankMeta, RANK_META_KEY};
use crate::side::CommInfo;
use crate::Error;

/// Key of the schema version in the Parquet footer.
pub const SCHEMA_VERSION_KEY: &str = "mpitrace.schema_version";

fn dict(name: &str, key: DataType) -> Field {
    Field::new(name, DataType::Dictionary(Box::new(key), Box::new(DataType::Utf8)), false)
}

/// Schema of `events/rank-NNNNN.parquet`.
pub fn events_schema() -> SchemaRef {
    use DataType::*;
    Arc::new(Schema::new(vec![
        Field::new(name::RANK, Int32, false),
        Field::new(name::THREAD, Int32, false),
        dict(name::KIND, Int8),
        dict(name::CALL, Int16),
        Field::new(name::T_START, Int64, false),
        Field::new(name::DURATION, Int64, true),
        Field::new(name::CLOCK_OFFSET, Int64, false),
        Field::new(name::RC, Int32, true),
        Field::new(name::SITE, UInt64, true),
        Field::new(name::COMM, UInt64, true),
        Field::new(name::PEER, Int32, true),
        Field::new(name::TAG, Int32, true),
        Field::new(name::DATATYPE, Int32, true),
        Field::new(name::COUNT, Int64, true),
        Field::new(name::BYTES, Int64, true),
        Field::new(name::SEQ, Int64, true),
        Field::new(name::REQUEST, Int32, true),
        Field::new(name::ROOT, Int32, true),
        Field::new(name::OP, Int32, true),
        Field::new(name::AUX, Int32, true),
        Field::new(name::RECV_BYTES, Int64, true),
        Field::new(name::NEW_COMM, UInt64, true),
        Field::new(name::FLAGS, UInt8, false),
        Field::new(name::RECV_DATATYPE, Int32, true),
    ]))
}

/// Schema of `comms/rank-NNNNN.parquet`.
pub fn comms_schema() -> SchemaRef {
    use DataType::*;
    let list = || List(Arc::new(Field::new("item", Int32, true)));
    Arc::new(Schema::new(vec![
        Field::new("id", UInt64, false),
        Field::new("parent", UInt64, true),
        Field::new("call", Utf8, false),
        Field::new("inter", Boolean, false),
        Field::new("size", Int32, false),
        Field::new("members", list(), false),
        Field::new("remote", list(), false),
        Field::new("name", Utf8, true),
    ]))
}

macro_rules! prim_col {
    ($events:expr, $builder:ty, |$e:ident| $get:expr) => {{
        let mut b = <$builder>::with_capacity($events.len());
        for $e in $events {
            b.append_option($get);
        }
        Arc::new(b.finish()) as ArrayRef
    }};
}

/// The events as an Arrow record batch.
pub fn events_batch(events: &[Event]) -> Result<RecordBatch, Error> {
    let mut kind = StringDictionaryBuilder::<Int8Type>::new();
    let mut call = StringDictionaryBuilder::<Int16Type>::new();
    for e in events {
        kind.append_value(e.kind.name());
        call.append_value(&*e.call);
    }
    let cols: Vec<ArrayRef> = vec![
        prim_col!(events, Int32Builder, |e| Some(e.rank)),
        prim_col!(events, Int32Builder, |e| Some(e.thread)),
        Arc::new(kind.finish()),
        Arc::new(call.finish()),
        prim_col!(events, Int64Builder, |e| Some(e.t_start)),
        prim_col!(events, Int64Builder, |e| e.t_end.map(|t| t - e.t_start)),
        prim_col!(events, Int64Builder, |e| Some(e.t_start - e.t_local)),
        prim_col!(events, Int32Builder, |e| e.rc),
        prim_col!(events, UInt64Builder, |e| e.site),
        prim_col!(events, UInt64Builder, |e| e.comm),
        prim_col!(events, Int32Builder, |e| e.peer),
        prim_col!(events, Int32Builder, |e| e.tag),
        prim_col!(events, Int32Builder, |e| e.datatype),
        prim_col!(events, Int64Builder, |e| e.count),
        prim_col!(events, Int64Builder, |e| e.bytes),
        prim_col!(events, Int64Builder, |e| e.seq),
        prim_col!(events, Int32Builder, |e| e.request),
        prim_col!(events, Int32Builder, |e| e.root),
        prim_col!(events, Int32Builder, |e| e.op),
        prim_col!(events, Int32Builder, |e| e.aux),
        prim_col!(events, Int64Builder, |e| e.recv_bytes),
        prim_col!(events, UInt64Builder, |e| e.new_comm),
        prim_col!(events, UInt8Builder, |e| Some(e.flags)),
        prim_col!(events, Int32Builder, |e| e.recv_datatype),
    ];
    RecordBatch::try_new(events_schema(), cols).map_err(|e| Error::Arrow(e.to_string()))
}

/// The communicators as an Arrow record batch.
pub fn comms_batch(comms: &[CommInfo]) -> Result<RecordBatch, Error> {
    let mut members = ListBuilder::new(Int32Builder::new());
    let mut remote = ListBuilder::new(Int32Builder::new());
    let mut call = StringBuilder::new();
    let mut name = StringBuilder::new();
    let mut inter = BooleanBuilder::new();
    for c in comms {
        members.append_value(c.members.iter().map(|&m| Some(m)));
        remote.append_value(c.remote.iter().map(|&m| Some(m)));
        call.append_value(&c.call);
        name.append_option(c.name.as_deref());
        inter.append_value(c.inter);
    }
    let cols: Vec<ArrayRef> = vec![
        prim_col!(comms, UInt64Builder, |c| Some(c.id)),
        prim_col!(comms, UInt64Builder, |c| c.parent),
        Arc::new(call.finish()),
        Arc::new(inter.finish()),
        prim_col!(comms, Int32Builder, |c| Some(c.members.len() as i32)),
        Arc::new(members.finish()),
        Arc::new(remote.finish()),
        Arc::new(name.finish()),
    ];
    RecordBatch::try_new(comms_schema(), cols).map_err(|e| Error::Arrow(e.to_string()))
}

fn writer_props(delta_cols: &[&str], meta: Vec<KeyValue>) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(6).unwrap_or_default()))
        .set_max_row_group_row_count(Some(1 << 20))
        .set_key_value_metadata(Some(meta));
    for c in delta_cols {
        let p = ColumnPath::from(*c);
        b = b.set_column_dictionary_enabled(p.clone(), false).set_column_encoding(p, Encoding::DELTA_BINARY_PACKED);
    }
    b.build()
}

fn write_batch(path: &Path, batch: &RecordBatch, props: WriterProperties) -> Result<(), Error> {
    let tmp = path.with_extension("parquet.tmp");
    let io = |e| Error::Io { path: tmp.clone(), source: e };
    let file = crate::private::create(&tmp).map_err(io)?;
    let pq = |e: parquet::errors::ParquetError| Error::Parquet { path: path.to_path_buf(), what: e.to_string() };
    let written = ArrowWriter::try_new(file, batch.schema(), Some(props)).and_then(|mut w| {
        w.write(batch)?;
        w.close().map(|_| ())
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(pq(e));
    }
    std::fs::rename(&tmp, path).map_err(|e| Error::Io { path: path.to_path_buf(), source: e })
}

/// Writes the events of one rank with its metadata in the footer.
pub fn write_events(path: &Path, events: &[Event], rank: &RankMeta) -> Result<(), Error> {
    let mut w = EventsWriter::create(path, rank)?;
    w.write(events)?;
    w.finish()
}

/// Writes an events file batch by batch (bounded memory for long traces);
/// the file appears under its name only when [`EventsWriter::finish`]ed.
pub struct EventsWriter {
    writer: ArrowWriter<File>,
    path: std::path::PathBuf,
    tmp: std::path::PathBuf,
}

impl EventsWriter {
    pub fn create(path: &Path, rank: &RankMeta) -> Result<Self, Error> {
        let meta = vec![
            KeyValue::new(RANK_META_KEY.to_string(), serde_json::to_string(rank).unwrap_or_default()),
            KeyValue::new(SCHEMA_VERSION_KEY.to_string(), crate::SCHEMA_VERSION.to_string()),
        ];
        // Start times grow along each thread: delta-encoded. Durations jump
        // up and down (deltas would double their range) and clock offsets
        // hardly change: both dictionary/RLE encoded, like the rest.
        let props = writer_props(&[name::T_START, name::SEQ], meta);
        let tmp = path.with_extension("parquet.tmp");
        let file = crate::private::create(&tmp).map_err(|e| Error::Io { path: tmp.clone(), source: e })?;
        let writer = ArrowWriter::try_new(file, events_schema(), Some(props))
            .map_err(|e| Error::Parquet { path: path.to_path_buf(), what: e.to_string() })?;
        Ok(EventsWriter { writer, path: path.to_path_buf(), tmp })
    }

    pub fn write(&mut self, events: &[Event]) -> Result<(), Error> {
        let batch = events_batch(events)?;
        self.writer.write(&batch).map_err(|e| Error::Parquet { path: self.path.clone(), what: e.to_string() })
    }

    /// Closes the file and moves it into place (on failure it is removed).
    pub fn finish(self) -> Result<(), Error> {
        if let Err(e) = self.writer.close() {
            let _ = std::fs::remove_file(&self.tmp);
            return Err(Error::Parquet { path: self.path.clone(), what: e.to_string() });
        }
        std::fs::rename(&self.tmp, &self.path).map_err(|e| Error::Io { path: self.path.clone(), source: e })
    }
}

/// Writes the communicators a rank belongs to.
pub fn write_comms(path: &Path, comms: &[CommInfo]) -> Result<(), Error> {
    let meta = vec![KeyValue::new(SCHEMA_VERSION_KEY.to_string(), crate::SCHEMA_VERSION.to_string())];
    write_batch(path, &comms_batch(comms)?, writer_props(&[], meta))
}

/// Most rows a Parquet file of a trace may hold per byte of its size.
/// Events files of real runs hold about one row per byte; two million
/// identical calls at a fixed period, as regular as a trace can be, hold
/// 13 per byte. A footer announcing far more is damaged or crafted
/// (run-length encoding can make billions of rows of a few bytes), and
/// its rows would cost memory far beyond the file's size.
pub const MAX_ROWS_PER_BYTE: u64 = 128;

/// Opens a Parquet file for reading, errors naming the file. Only a
/// regular file is opened, the row count its footer announces (in
/// total and per row group) must be plausible for its size
/// ([`MAX_ROWS_PER_BYTE`]), and every page header must be plausible for
/// its column chunk ([`crate::pages::check_pages`]): the Parquet reader
/// allocates what a page header claims before it reads the page.
pub fn open_parquet(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>, Error> {
    let (file, len) = crate::files::open_regular(path)?;
    // The builder takes the file; the page walk reads through a second
    // descriptor of it (positioned reads, so neither moves the other).
    let pages = file.try_clone().map_err(|e| Error::io(path, e))?;
    let b = guarded(path, || {
        ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| Error::Parquet { path: path.to_path_buf(), what: e.to_string() })
    })?;
    check_footer(path, len, b.metadata())?;
    crate::pages::check_pages(path, &pages, len, b.metadata())?;
    Ok(b)
}

/// Checks a Parquet footer against the file's size: the rows it announces
/// (in total and per row group) and where each column chunk lies.
fn check_footer(path: &Path, len: u64, md: &parquet::file::metadata::ParquetMetaData) -> Result<(), Error> {
    let max = len.saturating_mul(MAX_ROWS_PER_BYTE);
    let bad = |what: String| Error::Corrupt { path: path.to_path_buf(), what };
    let total = md.file_metadata().num_rows();
    if total < 0 || total as u64 > max {
        return Err(bad(format!("footer announces {total} rows, implausible for a file of {len} bytes")));
    }
    let mut sum = 0u64;
    for g in md.row_groups() {
        let n = g.num_rows();
        if n < 0 {
            return Err(bad(format!("a row group of {n} rows")));
        }
        sum = sum.saturating_add(n as u64);
        // Inside the file: the Parquet reader asserts that a chunk's start
        // and length are not negative (a panic), and would seek past the end.
        for c in g.columns() {
            let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
            let (size, raw) = (c.compressed_size(), c.uncompressed_size());
            if start < 0 || size < 0 || raw < 0 || (start as u64).saturating_add(size as u64) > len {
                return Err(bad(format!(
                    "column `{}` at bytes {start}..+{size} ({raw} uncompressed), outside the file's {len}",
                    c.column_path()
                )));
            }
        }
    }
    if sum > max {
        return Err(bad(format!("row groups of {sum} rows, implausible for a file of {len} bytes")));
    }
    Ok(())
}

/// Runs a step of the Parquet reader, turning a panic of it (an assertion
/// on data it did not check) into an error naming the file.
pub(crate) fn guarded<T>(path: &Path, f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(Error::Parquet { path: path.to_path_buf(), what: "damaged beyond what the reader checks".into() })
    })
}

/// Reads every batch of a Parquet file and its key-value metadata.
fn read_batches(path: &Path) -> Result<(Vec<RecordBatch>, HashMap<String, String>), Error> {
    let builder = open_parquet(path)?;
    let kv = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .map(|kv| kv.iter().map(|k| (k.key.clone(), k.value.clone().unwrap_or_default())).collect())
        .unwrap_or_default();
    let reader = builder
        .with_batch_size(65536)
        .build()
        .map_err(|e| Error::Parquet { path: path.to_path_buf(), what: e.to_string() })?;
    let mut batches = Vec::new();
    let mut reader = reader;
    while let Some(b) = guarded(path, || Ok(reader.next()))? {
        batches.push(b.map_err(|e| Error::Parquet { path: path.to_path_buf(), what: e.to_string() })?);
    }
    Ok((batches, kv))
}

/// Reads an events file: its rows and the rank metadata of its footer.
pub fn read_events(path: &Path) -> Result<(Vec<Event>, Option<RankMeta>), Error> {
    let (batches, kv) = read_batches(path)?;
    let meta = kv.get(RANK_META_KEY).and_then(|s| serde_json::from_str(s).ok());
    let corrupt = |e: ColumnError| Error::Corrupt { path: path.to_path_buf(), what: e.to_string() };
    let mut out = Vec::new();
    for batch in &batches {
        let c = EventColumns::new(batch).map_err(corrupt)?;
        c.check_complete().map_err(corrupt)?;
        // One shared string per distinct name of the batch.
        let calls: Vec<Arc<str>> = c.call().values().iter().map(|&s| Arc::from(s)).collect();
        let no_call: Arc<str> = Arc::from("");
        for i in 0..c.num_rows() {
            let kind = c.kind(i).ok_or_else(|| Error::Corrupt {
                path: path.to_path_buf(),
                what: format!("row {i}: unknown kind {:?}", c.kind_text(i)),
            })?;
            let t_start = c.t_start(i);
            out.push(Event {
                rank: c.rank(i).unwrap_or_default(),
                thread: c.thread(i),
                kind,
                call: c.call().key(i).map_or_else(|| no_call.clone(), |k| calls[k as usize].clone()),
                t_start,
                t_end: c.t_end(i),
                t_local: c.t_local(i).unwrap_or(t_start),
                rc: c.rc(i),
                site: c.site(i),
                comm: c.comm(i),
                peer: c.peer(i),
                tag: c.tag(i),
                datatype: c.datatype(i),
                count: c.count(i),
                bytes: c.bytes(i),
                seq: c.seq(i),
                request: c.request(i),
                root: c.root(i),
                op: c.op(i),
                aux: c.aux(i),
                recv_bytes: c.recv_bytes(i),
                recv_datatype: c.recv_datatype(i),
                new_comm: c.new_comm(i),
                flags: c.flags(i),
            });
        }
    }
    Ok((out, meta))
}

/// Reads a communicators file.
pub fn read_comms(path: &Path) -> Result<Vec<CommInfo>, Error> {
    let (batches, _) = read_batches(path)?;
    let bad = |what: String| Error::Corrupt { path: path.to_path_buf(), what };
    let mut out = Vec::new();
    for batch in &batches {
        let col = |name: &str| batch.column_by_name(name).ok_or_else(|| bad(format!("column `{name}` missing")));
        let wrong_type = |name: &str, c: &ArrayRef| bad(format!("column `{name}` has type {}", c.data_type()));
        let strings = |name: &str| {
            col(name).and_then(|c| Strings::of(c).ok_or_else(|| bad(format!("column `{name}` is not a string column"))))
        };
        let u64s = |name: &str| {
            col(name).and_then(|c| {
                c.as_any().downcast_ref::<PrimitiveArray<UInt64Type>>().ok_or_else(|| wrong_type(name, c))
            })
        };
        let (calls, names) = (strings("call")?, strings("name")?);
        let (id, parent) = (u64s("id")?, u64s("parent")?);
        let inter = col("inter")?
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| bad("column `inter` is not boolean".into()))?;
        let list = |name: &str| -> Result<Vec<Vec<i32>>, Error> {
            let l = col(name)?
                .as_any()
                .downcast_ref::<ListArray>()
                .ok_or_else(|| bad("member column is not a list".into()))?;
            (0..l.len())
                .map(|i| {
                    let v = l.value(i);
                    let v = v
                        .as_any()
                        .downcast_ref::<PrimitiveArray<Int32Type>>()
                        .ok_or_else(|| bad("members are not int32".into()))?;
                    Ok(v.values().to_vec())
                })
                .collect()
        };
        let (members, remote) = (list("members")?, list("remote")?);
        for i in 0..batch.num_rows() {
            out.push(CommInfo {
                slot: 0,
                id: id.value(i),
                parent: parent.is_valid(i).then(|| parent.value(i)),
                call: calls.get(i).unwrap_or("").to_string(),
                inter: inter.value(i),
                members: members[i].clone(),
                remote: remote[i].clone(),
                name: names.get(i).map(str::to_string),
            });
        }
    }
    Ok(out)
}

/// The rank metadata in the footer of an events file, without reading rows.
pub fn read_parquet_meta(path: &Path) -> Result<Option<RankMeta>, Error> {
    let builder = open_parquet(path)?;
    let kv = builder.metadata().file_metadata().key_value_metadata();
    Ok(kv
        .and_then(|kv| kv.iter().find(|k| k.key == RANK_META_KEY))
        .and_then(|k| k.value.as_deref())
        .and_then(|v| serde_json::from_str(v).ok()))
}

/// Number of rows of a Parquet file, from its footer.
pub fn count_rows(path: &Path) -> Result<i64, Error> {
    let builder = open_parquet(path)?;
    Ok(builder.metadata().file_metadata().num_rows())
}
