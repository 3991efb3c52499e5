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
use arrow_array::types::{Int16Type, Int32Type, Int64Type, Int8Type, UInt64Type, UInt8Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, ListArray, PrimitiveArray, RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::events::Event;
use crate::meta::{RankMeta, RANK_META_KEY};
use crate::record::Kind;
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
        Field::new("rank", Int32, false),
        Field::new("thread", Int32, false),
        dict("kind", Int8),
        dict("call", Int16),
        Field::new("t_start", Int64, false),
        Field::new("duration", Int64, true),
        Field::new("clock_offset", Int64, false),
        Field::new("rc", Int32, true),
        Field::new("site", UInt64, true),
        Field::new("comm", UInt64, true),
        Field::new("peer", Int32, true),
        Field::new("tag", Int32, true),
        Field::new("datatype", Int32, true),
        Field::new("count", Int64, true),
        Field::new("bytes", Int64, true),
        Field::new("seq", Int64, true),
        Field::new("request", Int32, true),
        Field::new("root", Int32, true),
        Field::new("op", Int32, true),
        Field::new("aux", Int32, true),
        Field::new("recv_bytes", Int64, true),
        Field::new("new_comm", UInt64, true),
        Field::new("flags", UInt8, false),
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
    let file = File::create(&tmp).map_err(io)?;
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
        let props = writer_props(&["t_start", "seq"], meta);
        let tmp = path.with_extension("parquet.tmp");
        let file = File::create(&tmp).map_err(|e| Error::Io { path: tmp.clone(), source: e })?;
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

/// Opens a Parquet file for reading, errors naming the file.
pub fn open_parquet(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>, Error> {
    let file = File::open(path).map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?;
    ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| Error::Parquet { path: path.to_path_buf(), what: e.to_string() })
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
    for b in reader {
        batches.push(b.map_err(|e| Error::Parquet { path: path.to_path_buf(), what: e.to_string() })?);
    }
    Ok((batches, kv))
}

/// Column access that reports missing or mistyped columns with the file name.
struct Cols<'a> {
    batch: &'a RecordBatch,
    path: &'a Path,
}

impl<'a> Cols<'a> {
    fn col(&self, name: &str) -> Result<&'a ArrayRef, Error> {
        self.batch
            .column_by_name(name)
            .ok_or_else(|| Error::Corrupt { path: self.path.to_path_buf(), what: format!("column `{name}` missing") })
    }
    fn prim<T: arrow_array::ArrowPrimitiveType>(&self, name: &str) -> Result<&'a PrimitiveArray<T>, Error> {
        self.col(name)?.as_any().downcast_ref::<PrimitiveArray<T>>().ok_or_else(|| Error::Corrupt {
            path: self.path.to_path_buf(),
            what: format!(
                "column `{name}` has type {}",
                self.col(name).map(|c| c.data_type().to_string()).unwrap_or_default()
            ),
        })
    }
    fn opt<T: arrow_array::ArrowPrimitiveType>(&self, name: &str, i: usize) -> Result<Option<T::Native>, Error> {
        let a = self.prim::<T>(name)?;
        Ok(a.is_valid(i).then(|| a.value(i)))
    }
    /// A string column (plain or dictionary-encoded) as shared strings.
    fn strings(&self, name: &str) -> Result<Vec<Option<Arc<str>>>, Error> {
        let c = self.col(name)?;
        let mut cache: HashMap<String, Arc<str>> = HashMap::new();
        let mut intern = |s: &str| cache.entry(s.to_string()).or_insert_with(|| Arc::from(s)).clone();
        if let Some(s) = c.as_any().downcast_ref::<StringArray>() {
            return Ok((0..s.len()).map(|i| s.is_valid(i).then(|| intern(s.value(i)))).collect());
        }
        macro_rules! try_dict {
            ($k:ty) => {
                if let Some(d) = c.as_any().downcast_ref::<DictionaryArray<$k>>() {
                    let values = d.values().as_any().downcast_ref::<StringArray>();
                    if let Some(values) = values {
                        let names: Vec<Arc<str>> = (0..values.len()).map(|i| intern(values.value(i))).collect();
                        return Ok(d.keys().iter().map(|k| k.map(|k| names[k as usize].clone())).collect());
                    }
                }
            };
        }
        try_dict!(Int8Type);
        try_dict!(Int16Type);
        try_dict!(Int32Type);
        Err(Error::Corrupt { path: self.path.to_path_buf(), what: format!("column `{name}` is not a string column") })
    }
}

fn kind_from_name(s: &str) -> Option<Kind> {
    [Kind::Call, Kind::RegionBegin, Kind::RegionEnd, Kind::Completion].into_iter().find(|k| k.name() == s)
}

/// Reads an events file: its rows and the rank metadata of its footer.
pub fn read_events(path: &Path) -> Result<(Vec<Event>, Option<RankMeta>), Error> {
    let (batches, kv) = read_batches(path)?;
    let meta = kv.get(RANK_META_KEY).and_then(|s| serde_json::from_str(s).ok());
    let mut out = Vec::new();
    for batch in &batches {
        let c = Cols { batch, path };
        let kinds = c.strings("kind")?;
        let calls = c.strings("call")?;
        let (rank, thread, t_start, flags) = (
            c.prim::<Int32Type>("rank")?,
            c.prim::<Int32Type>("thread")?,
            c.prim::<Int64Type>("t_start")?,
            c.prim::<UInt8Type>("flags")?,
        );
        // Schema 2 stores the clock correction, schema 1 the local time.
        let (local, is_offset) = match c.prim::<Int64Type>("clock_offset") {
            Ok(off) => (off, true),
            Err(_) => (c.prim::<Int64Type>("t_local")?, false),
        };
        for i in 0..batch.num_rows() {
            let kind = kinds[i].as_deref().and_then(kind_from_name).ok_or_else(|| Error::Corrupt {
                path: path.to_path_buf(),
                what: format!("row {i}: unknown kind {:?}", kinds[i]),
            })?;
            let t0 = t_start.value(i);
            out.push(Event {
                rank: rank.value(i),
                thread: thread.value(i),
                kind,
                call: calls[i].clone().unwrap_or_else(|| Arc::from("")),
                t_start: t0,
                t_end: c.opt::<Int64Type>("duration", i)?.map(|d| t0 + d),
                t_local: if is_offset { t0 - local.value(i) } else { local.value(i) },
                rc: c.opt::<Int32Type>("rc", i)?,
                site: c.opt::<UInt64Type>("site", i)?,
                comm: c.opt::<UInt64Type>("comm", i)?,
                peer: c.opt::<Int32Type>("peer", i)?,
                tag: c.opt::<Int32Type>("tag", i)?,
                datatype: c.opt::<Int32Type>("datatype", i)?,
                count: c.opt::<Int64Type>("count", i)?,
                bytes: c.opt::<Int64Type>("bytes", i)?,
                seq: c.opt::<Int64Type>("seq", i)?,
                request: c.opt::<Int32Type>("request", i)?,
                root: c.opt::<Int32Type>("root", i)?,
                op: c.opt::<Int32Type>("op", i)?,
                aux: c.opt::<Int32Type>("aux", i)?,
                recv_bytes: c.opt::<Int64Type>("recv_bytes", i)?,
                new_comm: c.opt::<UInt64Type>("new_comm", i)?,
                flags: flags.value(i),
            });
        }
    }
    Ok((out, meta))
}

/// Reads a communicators file.
pub fn read_comms(path: &Path) -> Result<Vec<CommInfo>, Error> {
    let (batches, _) = read_batches(path)?;
    let mut out = Vec::new();
    for batch in &batches {
        let c = Cols { batch, path };
        let calls = c.strings("call")?;
        let names = c.strings("name")?;
        let id = c.prim::<UInt64Type>("id")?;
        let bad = |what: &str| Error::Corrupt { path: path.to_path_buf(), what: what.to_string() };
        let inter = c
            .col("inter")?
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| bad("column `inter` is not boolean"))?;
        let list = |name: &str| -> Result<Vec<Vec<i32>>, Error> {
            let l =
                c.col(name)?.as_any().downcast_ref::<ListArray>().ok_or_else(|| bad("member column is not a list"))?;
            (0..l.len())
                .map(|i| {
                    let v = l.value(i);
                    let v = v
                        .as_any()
                        .downcast_ref::<PrimitiveArray<Int32Type>>()
                        .ok_or_else(|| bad("members are not int32"))?;
                    Ok(v.values().to_vec())
                })
                .collect()
        };
        let (members, remote) = (list("members")?, list("remote")?);
        for i in 0..batch.num_rows() {
            out.push(CommInfo {
                slot: 0,
                id: id.value(i),
                parent: c.opt::<UInt64Type>("parent", i)?,
                call: calls[i].as_deref().unwrap_or("").to_string(),
                inter: inter.value(i),
                members: members[i].clone(),
                remote: remote[i].clone(),
                name: names[i].as_deref().map(str::to_string),
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
