//! The page headers of a Parquet file, read and checked before the
//! Parquet reader decodes a page.
//!
//! The `parquet` crate trusts a page header's sizes: it reserves the
//! uncompressed size a data page claims (up to 2 GiB) before decompressing
//! it, and grows a dictionary to the number of values its header claims
//! (up to 16 GB for 8-byte values) before decoding one. Out of memory then
//! aborts the process; it is not a panic that could be caught. The crate
//! keeps its page-header reader private, so this module reads the headers
//! itself: a small reader of the Thrift compact protocol that knows the
//! `PageHeader` struct of the Parquet format, and a walk over each column
//! chunk that follows the pages exactly as the crate's reader does (from
//! the chunk's first page, header then data, until the chunk's length is
//! used up). Every page's sizes and counts are checked against the chunk
//! its footer describes and against fixed caps; a file that fails is
//! reported as corrupt and not decoded.
//!
//! The walk must see the same headers the crate will read, so where the
//! crate's reader departs from the protocol the header is refused rather
//! than read differently: a known field of another wire type than the
//! format's (the crate reads it as the format's type whatever it says), a
//! collection of booleans (the crate skips each element as zero bytes, the
//! protocol says one), varints over 10 bytes.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

use parquet::basic::Type as PhysicalType;
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};

use crate::Error;

/// Largest uncompressed page accepted. The writer cuts data pages at
/// 1 MiB (and 20000 rows) and falls back from a dictionary past 1 MiB,
/// checked every 1024 values, so its pages are about 1 MiB; a page may go
/// past that only by whole rows, and the widest row we write (a
/// communicator's member list at the largest job, 2^20 ranks) is 4 MiB.
/// The crate reserves this much before decompressing a page.
pub const MAX_PAGE_BYTES: u64 = 64 << 20;

/// Largest ratio of a page's uncompressed to compressed size. A zstd
/// frame holds at most 128 KiB per block and a block takes at least 4
/// bytes (an RLE block: 3 of header, the repeated byte), so no zstd page
/// expands more than 32768 times; the other codecs expand less.
pub const MAX_EXPANSION: u64 = 32768;

/// Most bytes a page header may take. The crate's writer puts no page
/// statistics in headers (they go to the column index); with them, min
/// and max are cut to 64 bytes. Headers are tens of bytes.
pub const MAX_HEADER_BYTES: usize = 64 << 10;

/// Deepest nesting of structs and collections in a header (the format's
/// is 3: page header, data page header, statistics).
const MAX_DEPTH: u32 = 16;

/// Most fields and collection elements read in one header: every one
/// takes at least a byte, so [`MAX_HEADER_BYTES`] bounds them already;
/// this bounds the work on garbage as plainly.
const MAX_ITEMS: u32 = 1 << 16;

/// Bytes read at once while walking a chunk's headers: the small pages of
/// a small file come in one read, and a header after a large page costs
/// a page of I/O, not a re-read of the file.
const WINDOW_BYTES: usize = 4 << 10;

/// The type of a page (the format's `PageType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKind {
    Data,
    Index,
    Dictionary,
    DataV2,
}

impl PageKind {
    fn of(v: i32) -> Option<PageKind> {
        Some(match v {
            0 => PageKind::Data,
            1 => PageKind::Index,
            2 => PageKind::Dictionary,
            3 => PageKind::DataV2,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            PageKind::Data => "data page",
            PageKind::Index => "index page",
            PageKind::Dictionary => "dictionary page",
            PageKind::DataV2 => "data page (v2)",
        }
    }
}

/// What a page header says, and where in the header its sizes and counts
/// are written (byte ranges from the header's start: for tools that patch
/// a header, such as the tests that damage one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageHeader {
    pub kind: PageKind,
    pub uncompressed_size: i32,
    pub compressed_size: i32,
    /// Values of a data page (v1 or v2) or entries of a dictionary page.
    pub num_values: Option<i32>,
    /// Rows of a v2 data page.
    pub num_rows: Option<i32>,
    /// Bytes the header takes.
    pub len: usize,
    pub uncompressed_at: Range<usize>,
    pub compressed_at: Range<usize>,
    pub num_values_at: Option<Range<usize>>,
}

/// Why a page header could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The bytes end before the header does (more may make it whole).
    #[error("the header is cut short")]
    Truncated,
    #[error("{0}")]
    Bad(String),
}

/// Thrift compact-protocol wire types.
mod wire {
    pub const TRUE: u8 = 1;
    pub const FALSE: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const I16: u8 = 4;
    pub const I32: u8 = 5;
    pub const I64: u8 = 6;
    pub const DOUBLE: u8 = 7;
    pub const BINARY: u8 = 8;
    pub const LIST: u8 = 9;
    pub const SET: u8 = 10;
    pub const MAP: u8 = 11;
    pub const STRUCT: u8 = 12;
    pub const UUID: u8 = 13;
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    items: u32,
}

fn bad<T>(what: impl Into<String>) -> Result<T, HeaderError> {
    Err(HeaderError::Bad(what.into()))
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, HeaderError> {
        let b = *self.buf.get(self.pos).ok_or(HeaderError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    fn skip_bytes(&mut self, n: u64) -> Result<(), HeaderError> {
        let left = (self.buf.len() - self.pos) as u64;
        if n > left {
            // The header would go on past these bytes: more may hold it
            // (the caller caps how many it offers).
            return Err(HeaderError::Truncated);
        }
        self.pos += n as usize;
        Ok(())
    }

    /// One more field or element: bounds the work on garbage.
    fn item(&mut self) -> Result<(), HeaderError> {
        self.items += 1;
        if self.items > MAX_ITEMS {
            return bad(format!("more than {MAX_ITEMS} fields"));
        }
        Ok(())
    }

    /// An unsigned LEB128 varint, as the crate reads it (bits past 64 are
    /// lost), but of at most 10 bytes.
    fn varint(&mut self) -> Result<u64, HeaderError> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            v |= ((b & 0x7f) as u64).wrapping_shl(7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        bad("a varint longer than 10 bytes")
    }

    fn zigzag(&mut self) -> Result<i64, HeaderError> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// An i32, truncated from the varint as the crate does, so the value
    /// checked is the value it uses.
    fn i32(&mut self) -> Result<(i32, Range<usize>), HeaderError> {
        let start = self.pos;
        let v = self.zigzag()? as i32;
        Ok((v, start..self.pos))
    }

    /// A field header: `None` at the struct's end, else the wire type and
    /// the field id (a delta from `last` or, with delta 0, a full id).
    fn field(&mut self, last: i16) -> Result<Option<(u8, i16)>, HeaderError> {
        let b = self.byte()?;
        // The crate ends a struct at any byte whose type nibble is 0.
        if b & 0x0f == 0 {
            return Ok(None);
        }
        self.item()?;
        let (ty, delta) = (b & 0x0f, b >> 4);
        if ty > wire::UUID {
            return bad(format!("unknown wire type {ty}"));
        }
        let id = if delta != 0 {
            match last.checked_add(delta as i16) {
                Some(id) => id,
                None => return bad("field id overflows"),
            }
        } else {
            self.zigzag()? as i16
        };
        Ok(Some((ty, id)))
    }

    /// A collection's element type: anything but a boolean.
    fn element(&mut self, ty: u8) -> Result<u8, HeaderError> {
        match ty {
            wire::TRUE | wire::FALSE => {
                bad("a collection of booleans (no page header has one, and the Parquet reader skips them unlike the protocol)")
            }
            wire::BYTE..=wire::UUID => Ok(ty),
            _ => bad(format!("unknown element type {ty}")),
        }
    }

    /// Skips a value of wire type `ty`, nested `depth` deep.
    fn skip(&mut self, ty: u8, depth: u32) -> Result<(), HeaderError> {
        if depth > MAX_DEPTH {
            return bad(format!("nested more than {MAX_DEPTH} deep"));
        }
        match ty {
            // A boolean field's value is its wire type.
            wire::TRUE | wire::FALSE => Ok(()),
            wire::BYTE => self.skip_bytes(1),
            wire::I16 | wire::I32 | wire::I64 => self.varint().map(|_| ()),
            wire::DOUBLE => self.skip_bytes(8),
            wire::BINARY => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            wire::LIST | wire::SET => {
                let h = self.byte()?;
                if h == 0 {
                    // Some writers mark an empty list with a 0 byte.
                    return Ok(());
                }
                let elem = self.element(h & 0x0f)?;
                let n = match h >> 4 {
                    15 => self.count()?,
                    n => n as u32,
                };
                for _ in 0..n {
                    // Every element takes a byte at least (booleans are
                    // refused): garbage runs out of bytes or items.
                    self.item()?;
                    self.skip(elem, depth + 1)?;
                }
                Ok(())
            }
            wire::MAP => {
                let n = self.count()?;
                if n > 0 {
                    let kv = self.byte()?;
                    let (k, v) = (self.element(kv >> 4)?, self.element(kv & 0x0f)?);
                    for _ in 0..n {
                        self.item()?;
                        self.skip(k, depth + 1)?;
                        self.skip(v, depth + 1)?;
                    }
                }
                Ok(())
            }
            wire::STRUCT => {
                let mut last = 0;
                while let Some((t, id)) = self.field(last)? {
                    self.skip(t, depth + 1)?;
                    last = id;
                }
                Ok(())
            }
            wire::UUID => self.skip_bytes(16),
            _ => bad(format!("unknown wire type {ty}")),
        }
    }

    /// A collection's size (the crate refuses sizes past `i32::MAX`).
    fn count(&mut self) -> Result<u32, HeaderError> {
        match i32::try_from(self.varint()?) {
            Ok(n) => Ok(n as u32),
            Err(_) => bad("a collection of more than 2^31 elements"),
        }
    }
}

/// The field `id` of struct `what` must have wire type `want` (the crate
/// reads a known field as its type whatever the wire says).
fn expect(what: &str, id: i16, ty: u8, want: u8) -> Result<(), HeaderError> {
    let ok = if want == wire::TRUE { ty == wire::TRUE || ty == wire::FALSE } else { ty == want };
    if ok {
        Ok(())
    } else {
        bad(format!("field {id} of the {what} has wire type {ty}, not {want}"))
    }
}

/// What the reader keeps of a nested page header: its count fields.
#[derive(Default)]
struct Counts {
    num_values: Option<(i32, Range<usize>)>,
    num_rows: Option<i32>,
}

/// Reads a nested struct of which the crate reads the fields `ints` as
/// i32 (encodings among them) and `bools` as booleans; others are skipped.
/// Field 1 is the number of values in every page header kind; field 3 of
/// a v2 data page header its rows.
fn sub_header(r: &mut Reader, what: &str, ints: &[i16], bools: &[i16], v2: bool) -> Result<Counts, HeaderError> {
    let mut c = Counts::default();
    let mut last = 0;
    while let Some((ty, id)) = r.field(last)? {
        if ints.contains(&id) {
            expect(what, id, ty, wire::I32)?;
            let (v, at) = r.i32()?;
            if id == 1 {
                c.num_values = Some((v, at));
            } else if id == 3 && v2 {
                c.num_rows = Some(v);
            }
        } else if bools.contains(&id) {
            expect(what, id, ty, wire::TRUE)?;
        } else {
            r.skip(ty, 2)?;
        }
        last = id;
    }
    Ok(c)
}

/// Reads the page header at the start of `buf` (the Parquet format's
/// `PageHeader`, Thrift compact protocol). [`HeaderError::Truncated`]
/// when `buf` ends first; never panics, and reads at most `buf`.
pub fn read_header(buf: &[u8]) -> Result<PageHeader, HeaderError> {
    let r = &mut Reader { buf, pos: 0, items: 0 };
    let (mut kind, mut unc, mut comp) = (None, None, None);
    let (mut data, mut index, mut dict, mut data_v2) = (None, false, None, None);
    let mut last = 0;
    while let Some((ty, id)) = r.field(last)? {
        match id {
            1..=4 => {
                expect("page header", id, ty, wire::I32)?;
                let (v, at) = r.i32()?;
                match id {
                    1 => kind = Some(PageKind::of(v).map_or_else(|| bad(format!("unknown page type {v}")), Ok)?),
                    2 => unc = Some((v, at)),
                    3 => comp = Some((v, at)),
                    _ => {} // the CRC
                }
            }
            5..=8 => {
                expect("page header", id, ty, wire::STRUCT)?;
                match id {
                    // num_values, encoding, definition and repetition level encodings
                    5 => data = Some(sub_header(r, "data page header", &[1, 2, 3, 4], &[], false)?),
                    6 => {
                        sub_header(r, "index page header", &[], &[], false)?;
                        index = true;
                    }
                    // num_values, encoding; is_sorted
                    7 => dict = Some(sub_header(r, "dictionary page header", &[1, 2], &[3], false)?),
                    // num_values, num_nulls, num_rows, encoding, level lengths; is_compressed
                    _ => data_v2 = Some(sub_header(r, "data page header (v2)", &[1, 2, 3, 4, 5, 6], &[7], true)?),
                }
            }
            _ => r.skip(ty, 1)?,
        }
        last = id;
    }
    let Some(kind) = kind else { return bad("no page type") };
    let Some((uncompressed_size, uncompressed_at)) = unc else { return bad("no uncompressed size") };
    let Some((compressed_size, compressed_at)) = comp else { return bad("no compressed size") };
    let sub = match kind {
        PageKind::Data => data,
        PageKind::Dictionary => dict,
        PageKind::DataV2 => data_v2,
        PageKind::Index => index.then(Counts::default),
    };
    let Some(sub) = sub else { return bad(format!("a {} without its header", kind.name())) };
    if kind != PageKind::Index && sub.num_values.is_none() {
        return bad(format!("a {} header without its number of values", kind.name()));
    }
    if kind == PageKind::DataV2 && sub.num_rows.is_none() {
        return bad("a data page (v2) header without its number of rows");
    }
    let (num_values, num_values_at) = match sub.num_values {
        Some((v, at)) => (Some(v), Some(at)),
        None => (None, None),
    };
    Ok(PageHeader {
        kind,
        uncompressed_size,
        compressed_size,
        num_values,
        num_rows: sub.num_rows,
        len: r.pos,
        uncompressed_at,
        compressed_at,
        num_values_at,
    })
}

/// Fewest bytes one value of `ty` takes in a dictionary page (PLAIN):
/// `(bytes, values)`, i.e. `values` values per `bytes` bytes.
fn min_value_bytes(ty: PhysicalType, type_length: i32) -> (u64, u64) {
    match ty {
        PhysicalType::BOOLEAN => (1, 8),
        PhysicalType::INT32 | PhysicalType::FLOAT => (4, 1),
        PhysicalType::INT64 | PhysicalType::DOUBLE => (8, 1),
        PhysicalType::INT96 => (12, 1),
        // A length prefix of 4 bytes, then the bytes.
        PhysicalType::BYTE_ARRAY => (4, 1),
        PhysicalType::FIXED_LEN_BYTE_ARRAY => (type_length.max(1) as u64, 1),
    }
}

/// A file's bytes read in windows, never past `len`.
struct Window<'f> {
    file: &'f File,
    len: u64,
    start: u64,
    data: Vec<u8>,
}

impl Window<'_> {
    /// Up to `want` bytes at `at` (fewer at the end of the file, none past
    /// it). Holds at most `max(want, WINDOW_BYTES)` bytes.
    fn at(&mut self, path: &Path, at: u64, want: usize) -> Result<&[u8], Error> {
        let rest = self.len.saturating_sub(at);
        let want = (want as u64).min(rest) as usize;
        let cached = at >= self.start && at.saturating_add(want as u64) <= self.start + self.data.len() as u64;
        if !cached {
            let n = (want.max(WINDOW_BYTES) as u64).min(rest) as usize;
            self.data.clear();
            self.data.resize(n, 0);
            self.file.read_exact_at(&mut self.data, at).map_err(|e| Error::io(path, e))?;
            self.start = at;
        }
        let from = (at - self.start) as usize;
        Ok(&self.data[from..from + want])
    }
}

/// Walks the pages of every column chunk of a Parquet file and checks
/// each header before the Parquet reader trusts it: the header lies in
/// its chunk, the page's compressed size fits in what is left of the
/// chunk, its uncompressed size is at most [`MAX_EXPANSION`] times the
/// compressed one, at most the chunk's uncompressed size and at most
/// [`MAX_PAGE_BYTES`]; a dictionary holds no more entries than its
/// uncompressed bytes can hold values of the column's type; a data page
/// holds no more values than its chunk. `md` must be the footer already
/// checked by `table::check_footer` (chunks inside the file).
pub fn check_pages(path: &Path, file: &File, len: u64, md: &ParquetMetaData) -> Result<(), Error> {
    walk(path, file, len, md, &mut |_| {})
}

/// A page of a Parquet file: its column, where its header starts, what
/// the header says.
#[derive(Clone, Debug)]
pub struct Page {
    pub row_group: usize,
    pub column: String,
    pub offset: u64,
    pub header: PageHeader,
}

/// The pages of a Parquet file, in file order, checked as
/// [`check_pages`] does (for tools and tests that look at or patch them).
pub fn list_pages(path: &Path) -> Result<Vec<Page>, Error> {
    let md = crate::table::open_parquet(path)?.metadata().clone();
    let (file, len) = crate::files::open_regular(path)?;
    let mut pages = Vec::new();
    walk(path, &file, len, &md, &mut |p| pages.push(p))?;
    Ok(pages)
}

/// Walks and checks every chunk's pages, showing each to `seen`.
fn walk(path: &Path, file: &File, len: u64, md: &ParquetMetaData, seen: &mut dyn FnMut(Page)) -> Result<(), Error> {
    let mut w = Window { file, len, start: 0, data: Vec::new() };
    for (g, rg) in md.row_groups().iter().enumerate() {
        for c in rg.columns() {
            let mut each = |offset, header| {
                seen(Page { row_group: g, column: c.column_path().string(), offset, header });
            };
            check_chunk(path, &mut w, c, rg.num_rows(), &mut each).map_err(|what| Error::Corrupt {
                path: path.to_path_buf(),
                what: format!("row group {g}, column `{}`: {what}", c.column_path().string()),
            })?;
        }
    }
    Ok(())
}

/// Checks the pages of one column chunk; the error says what is wrong.
fn check_chunk(
    path: &Path,
    w: &mut Window,
    c: &ColumnChunkMetaData,
    rows: i64,
    seen: &mut dyn FnMut(u64, PageHeader),
) -> Result<(), String> {
    let io = |e: Error| e.to_string();
    // The crate starts at the dictionary page when there is one.
    let mut at = c.dictionary_page_offset().unwrap_or(c.data_page_offset()).max(0) as u64;
    let mut left = c.compressed_size().max(0) as u64;
    let chunk_raw = c.uncompressed_size().max(0) as u64;
    let chunk_values = c.num_values().max(0) as u64;
    let (ty, type_length) = (c.column_type(), c.column_descr().type_length());
    let mut page = 0u64;
    while left > 0 {
        // A header is read from what is left of the chunk, more of it
        // each time it proves too short.
        let mut want = 256usize;
        let h = loop {
            let most = (left as usize).min(MAX_HEADER_BYTES);
            let buf = w.at(path, at, want.min(most)).map_err(io)?;
            match read_header(buf) {
                Ok(h) => break h,
                Err(HeaderError::Truncated) if want < most => want = want.saturating_mul(4),
                Err(HeaderError::Truncated) if most == MAX_HEADER_BYTES && (left as usize) > most => {
                    return Err(format!("page {page} at byte {at}: a header of more than {MAX_HEADER_BYTES} bytes"))
                }
                Err(HeaderError::Truncated) => {
                    return Err(format!("page {page} at byte {at}: its header runs past the end of the chunk"))
                }
                Err(HeaderError::Bad(what)) => return Err(format!("page {page} at byte {at}: {what}")),
            }
        };
        let name = h.kind.name();
        let start = at;
        let fail = |what: String| Err(format!("page {page} at byte {start} ({name}): {what}"));
        at += h.len as u64;
        left -= h.len as u64;
        let (comp, raw) = (h.compressed_size, h.uncompressed_size);
        if comp < 0 || comp as u64 > left {
            return fail(format!("{comp} compressed bytes, but {left} left in the chunk"));
        }
        if raw < 0 {
            return fail(format!("{raw} uncompressed bytes"));
        }
        let (comp, raw) = (comp as u64, raw as u64);
        if raw > comp.saturating_mul(MAX_EXPANSION) {
            return fail(format!("{raw} uncompressed bytes from {comp} compressed, more than {MAX_EXPANSION} times"));
        }
        if raw > chunk_raw {
            return fail(format!("{raw} uncompressed bytes, more than its chunk's {chunk_raw}"));
        }
        if raw > MAX_PAGE_BYTES {
            return fail(format!("{raw} uncompressed bytes, more than a page may hold ({MAX_PAGE_BYTES})"));
        }
        let n = h.num_values.unwrap_or(0);
        if n < 0 {
            return fail(format!("{n} values"));
        }
        let n = n as u64;
        match h.kind {
            PageKind::Dictionary => {
                let (bytes, per) = min_value_bytes(ty, type_length);
                let most = raw / bytes * per + raw % bytes * per / bytes;
                if n > most {
                    return fail(format!("{n} dictionary entries in {raw} bytes of {ty} values"));
                }
            }
            PageKind::Data | PageKind::DataV2 => {
                if n > chunk_values {
                    return fail(format!("{n} values, more than its chunk's {chunk_values}"));
                }
                if let Some(r) = h.num_rows {
                    if r < 0 || r as i64 > rows {
                        return fail(format!("{r} rows, in a row group of {rows}"));
                    }
                }
            }
            PageKind::Index => {}
        }
        seen(start, h);
        at += comp;
        left -= comp;
        page += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compact-protocol writer of just what the tests need.
    #[derive(Default)]
    struct W(Vec<u8>);

    impl W {
        fn varint(&mut self, mut v: u64) -> &mut Self {
            loop {
                let b = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    self.0.push(b);
                    return self;
                }
                self.0.push(b | 0x80);
            }
        }
        fn i32(&mut self, delta: u8, v: i32) -> &mut Self {
            self.0.push(delta << 4 | wire::I32);
            self.varint(((v << 1) ^ (v >> 31)) as u32 as u64)
        }
        fn open(&mut self, delta: u8) -> &mut Self {
            self.0.push(delta << 4 | wire::STRUCT);
            self
        }
        fn stop(&mut self) -> &mut Self {
            self.0.push(0);
            self
        }
    }

    /// A v1 data page header as the crate writes one.
    fn data_page(raw: i32, comp: i32, values: i32) -> Vec<u8> {
        let mut w = W::default();
        w.i32(1, 0).i32(1, raw).i32(1, comp).open(2).i32(1, values).i32(1, 0).i32(1, 3).i32(1, 3).stop().stop();
        w.0
    }

    #[test]
    fn reads_a_data_page_header() {
        let b = data_page(1000, 200, 50);
        let h = read_header(&b).unwrap();
        assert_eq!(
            (h.kind, h.uncompressed_size, h.compressed_size, h.num_values),
            (PageKind::Data, 1000, 200, Some(50))
        );
        assert_eq!(h.len, b.len());
        // Where each number is: patching there changes what is read.
        assert_eq!(h.uncompressed_at, 3..5);
        assert_eq!(h.compressed_at, 6..8);
        assert_eq!(h.num_values_at, Some(10..11));
        // Every proper prefix is cut short, never misread.
        for n in 0..b.len() {
            assert_eq!(read_header(&b[..n]), Err(HeaderError::Truncated), "prefix of {n}");
        }
        // Bytes after the header are not its.
        let mut more = b.clone();
        more.extend_from_slice(&[0xff; 10]);
        assert_eq!(read_header(&more).unwrap().len, b.len());
    }

    #[test]
    fn skips_unknown_fields_of_every_kind() {
        let mut w = W::default();
        w.i32(1, 2).i32(1, 64).i32(1, 30);
        // Field 9: a struct holding a binary, a list of i64, a map, a
        // double, a nested struct, a boolean and a uuid; field 10 a set.
        w.0.push(6 << 4 | wire::STRUCT);
        w.0.push(1 << 4 | wire::BINARY);
        w.varint(3).0.extend_from_slice(b"abc");
        w.0.extend_from_slice(&[1 << 4 | wire::LIST, 3 << 4 | wire::I64, 2, 4, 6]);
        w.0.extend_from_slice(&[1 << 4 | wire::MAP, 2, wire::I32 << 4 | wire::BINARY, 2, 1, b'x', 4, 1, b'y']);
        w.0.push(1 << 4 | wire::DOUBLE);
        w.0.extend_from_slice(&[0; 8]);
        w.open(1).i32(1, 7).stop();
        w.0.push(1 << 4 | wire::TRUE);
        w.0.push(1 << 4 | wire::UUID);
        w.0.extend_from_slice(&[9; 16]);
        // A field with a full id (delta 0): id 40, an i16.
        w.0.push(wire::I16);
        w.varint(80).varint(5);
        w.stop();
        // A long list (size in a varint) of empty structs.
        w.0.extend_from_slice(&[1 << 4 | wire::SET, 0xf0 | wire::STRUCT]);
        w.varint(20);
        w.0.extend_from_slice(&[0; 20]);
        // Back to field 7: the dictionary page header (num_values 16,
        // encoding 0, is_sorted false). A full id, after field 10.
        w.0.push(wire::STRUCT);
        w.varint(14);
        w.i32(1, 16).i32(1, 0);
        w.0.push(1 << 4 | wire::FALSE);
        w.stop().stop();
        let h = read_header(&w.0).unwrap();
        assert_eq!((h.kind, h.uncompressed_size, h.num_values, h.len), (PageKind::Dictionary, 64, Some(16), w.0.len()));
    }

    #[test]
    fn refuses_what_the_crate_would_read_otherwise() {
        let bad_of = |b: &[u8]| match read_header(b) {
            Err(HeaderError::Bad(w)) => w,
            other => panic!("{other:?} for {b:?}"),
        };
        // uncompressed_page_size as a binary: the crate reads it as an i32.
        let mut w = W::default();
        w.i32(1, 0);
        w.0.extend_from_slice(&[1 << 4 | wire::BINARY, 1, 0]);
        assert!(bad_of(&w.0).contains("field 2 of the page header has wire type 8"));
        // A list of booleans in an unknown field.
        let b = [1 << 4 | wire::I32, 0, 8 << 4 | wire::LIST, 3 << 4 | wire::TRUE, 1, 1, 1, 0];
        assert!(bad_of(&b).contains("booleans"));
        // A varint of 11 bytes.
        let mut b = vec![1 << 4 | wire::I32];
        b.extend_from_slice(&[0x80; 10]);
        b.push(0);
        assert!(bad_of(&b).contains("longer than 10 bytes"));
        // Nesting past the bound.
        let mut b = vec![9 << 4 | wire::STRUCT];
        b.extend(std::iter::repeat_n(1 << 4 | wire::STRUCT, 40));
        assert!(bad_of(&b).contains("nested"));
        // A page type the format has not.
        let mut w = W::default();
        w.i32(1, 9);
        assert!(bad_of(&w.0).contains("unknown page type 9"));
        // A data page without its data page header.
        let mut w = W::default();
        w.i32(1, 0).i32(1, 10).i32(1, 10).stop();
        assert!(bad_of(&w.0).contains("without its header"));
        // Unknown wire types.
        assert!(bad_of(&[1 << 4 | 14]).contains("wire type 14"));
    }

    #[test]
    fn garbage_never_panics_or_hangs() {
        // Seeded xorshift garbage, and garbage after a plausible start.
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let start = data_page(100, 20, 5);
        for case in 0..20_000 {
            let n = (next() % 300) as usize;
            let mut b: Vec<u8> = (0..n).map(|_| next() as u8).collect();
            if case % 2 == 0 {
                let k = (next() as usize) % start.len();
                b.splice(0..0, start[..k].iter().copied());
            }
            if let Ok(h) = read_header(&b) {
                assert!(h.len <= b.len());
                assert!(h.uncompressed_at.end <= h.len && h.compressed_at.end <= h.len);
            }
        }
        // A list claiming 2^31 - 1 elements ends with its bytes.
        let mut b = vec![1 << 4 | wire::LIST, 0xf0 | wire::I32];
        b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x07]);
        b.extend_from_slice(&[0; 1000]);
        assert!(read_header(&b).is_err());
    }

    /// Events of one rank: a few calls, durations of many values (a large
    /// dictionary), times growing.
    fn sample_events(n: i64) -> Vec<crate::events::Event> {
        use crate::events::Event;
        use crate::record::Kind;
        let calls: [std::sync::Arc<str>; 3] = ["MPI_Send".into(), "MPI_Recv".into(), "MPI_Allreduce".into()];
        (0..n)
            .map(|i| Event {
                rank: 0,
                thread: 0,
                kind: Kind::Call,
                call: calls[(i % 3) as usize].clone(),
                t_start: 1000 * i,
                t_end: Some(1000 * i + 10 + i % 500),
                t_local: 1000 * i - 7,
                rc: Some(0),
                site: Some(0x40 + (i % 7) as u64),
                comm: Some(1),
                peer: Some((i % 4) as i32),
                tag: Some(5),
                datatype: None,
                count: Some(8),
                bytes: Some(64),
                seq: Some(i),
                request: None,
                root: None,
                op: None,
                aux: None,
                recv_bytes: None,
                recv_datatype: None,
                new_comm: None,
                flags: 1,
            })
            .collect()
    }

    /// A small events file written by our writer: its headers read, their
    /// walk checks, and each check fires on a patched header.
    #[test]
    fn headers_of_a_real_file() {
        let dir = std::env::temp_dir().join(format!("trace-format-pages-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rank-00000.parquet");
        let events = sample_events(3000);
        crate::table::write_events(&path, &events, &Default::default()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let builder = crate::table::open_parquet(&path).unwrap();
        let md = builder.metadata().clone();
        let mut dictionaries = 0;
        let mut first_data = None;
        let mut first_dict = None;
        for rg in md.row_groups() {
            for c in rg.columns() {
                let (start, len) = c.byte_range();
                let (mut at, end) = (start as usize, (start + len) as usize);
                while at < end {
                    let h = read_header(&bytes[at..end]).unwrap();
                    match h.kind {
                        PageKind::Dictionary => {
                            dictionaries += 1;
                            first_dict.get_or_insert((at, h.clone()));
                        }
                        PageKind::Data => {
                            assert!(h.num_values.unwrap() as i64 <= c.num_values());
                            first_data.get_or_insert((at, h.clone()));
                        }
                        k => panic!("our writer wrote a {k:?}"),
                    }
                    assert!(h.uncompressed_size as u64 <= MAX_PAGE_BYTES);
                    at += h.len + h.compressed_size as usize;
                }
                assert_eq!(at, end, "pages fill the chunk");
            }
        }
        assert!(dictionaries > 0, "the writer makes dictionary pages");
        let file = File::open(&path).unwrap();
        check_pages(&path, &file, bytes.len() as u64, &md).unwrap();
        // Chunks past the end of what is read (a footer not checked
        // against the file first): an error, never a panic or a read past.
        for len in [0, 4, 100] {
            let e = match check_pages(&path, &file, len, &md) {
                Ok(()) => panic!("{len} ok"),
                Err(e) => e.to_string(),
            };
            assert!(e.contains("runs past the end of the chunk"), "{len}: {e}");
        }

        // Patching a number with a varint of the same length.
        let patch = |at: usize, range: &Range<usize>, v: i32| {
            let mut b = bytes.clone();
            let zz = ((v << 1) ^ (v >> 31)) as u32 as u64;
            let n = range.len();
            for i in 0..n {
                let more = if i + 1 < n { 0x80 } else { 0 };
                b[at + range.start + i] = ((zz >> (7 * i)) & 0x7f) as u8 | more;
            }
            assert_eq!(zz >> (7 * n), 0, "{v} fits in {n} bytes");
            let p = dir.join("patched.parquet");
            std::fs::write(&p, &b).unwrap();
            let f = File::open(&p).unwrap();
            check_pages(&p, &f, b.len() as u64, &md).unwrap_err().to_string()
        };
        let (at, h) = first_data.unwrap();
        let big = (1 << (7 * h.uncompressed_at.len() - 1)) - 1;
        let e = patch(at, &h.uncompressed_at, big);
        assert!(e.contains("uncompressed bytes"), "{e}");
        let e = patch(
            at,
            &h.compressed_at,
            h.compressed_size + 1_000_000.min((1 << (7 * h.compressed_at.len() - 1)) - 1 - h.compressed_size),
        );
        assert!(e.contains("left in the chunk"), "{e}");
        let range = h.num_values_at.clone().unwrap();
        let e = patch(at, &range, (1 << (7 * range.len() - 1)) - 1);
        assert!(e.contains("values, more than its chunk's"), "{e}");
        let (at, h) = first_dict.unwrap();
        let range = h.num_values_at.clone().unwrap();
        let e = patch(at, &range, (1 << (7 * range.len() - 1)) - 1);
        assert!(e.contains("dictionary entries"), "{e}");
        let e = patch(at, &h.uncompressed_at, -1);
        assert!(e.contains("-1 uncompressed bytes"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
