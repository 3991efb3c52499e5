//! Conversion of a rank's journals to Parquet that writes the rank's
//! level-of-detail cache from the same reading ([`convert_rank`]), so that
//! a viewer's first frame of a finished trace needs no reading of it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use trace_format::record::Kind;
use trace_format::{layout, Converted, Event};

use crate::coarse::{self, CoarseBuilder, Trailer};
use crate::source::{raw, RankState};

/// Converts the journals of `rank` in `dir` into its Parquet files
/// ([`trace_format::convert_rank`]) and writes its level-of-detail cache
/// (coarse levels, [`crate::coarse`]) from the events as they go by. A
/// cache that cannot be written is left out with a problem saying why;
/// the conversion itself is what may fail.
pub fn convert_rank(dir: &Path, rank: i32, keep_journals: bool) -> Result<Converted, trace_format::Error> {
    let base = trace_format::events::call_names().len();
    let mut builder = CoarseBuilder::default();
    let mut extra: Vec<String> = Vec::new();
    // Names met, by the address of their shared string (the journal reader
    // shares one per call name), then by value.
    let mut ids: HashMap<Arc<str>, u16> = HashMap::new();
    let mut converted = trace_format::convert_rank_with(dir, rank, keep_journals, &mut |chunk: &[Event]| {
        for e in chunk.iter().filter(|e| e.kind == Kind::Call) {
            let name = match ids.get(&e.call) {
                Some(&i) => i,
                None => {
                    let i = trace_format::events::call_id(&e.call).unwrap_or_else(|| {
                        extra.push(e.call.to_string());
                        (base + extra.len() - 1).min(u16::MAX as usize) as u16
                    });
                    ids.insert(e.call.clone(), i);
                    i
                }
            };
            builder.push(raw(e.t_start, e.t_end, name, e.rc.is_some_and(|c| c != 0), e.bytes));
        }
    })?;
    if let Err(e) = write_cache(dir, rank, builder, extra) {
        converted.problems.push(format!("rank {rank}: level-of-detail cache not written: {e}"));
    }
    Ok(converted)
}

/// Writes the cache file of `rank` from what `builder` saw of its events
/// file, now complete.
fn write_cache(dir: &Path, rank: i32, builder: CoarseBuilder, extra_names: Vec<String>) -> Result<(), String> {
    let events = layout::events(dir, rank);
    let (source_len, source_mtime_ns) = coarse::stamp(&events).map_err(|e| format!("{}: {e}", events.display()))?;
    let meta = trace_format::table::read_parquet_meta(&events).map_err(|e| e.to_string())?;
    // What the level of detail's reader says of the same file.
    let state = match &meta {
        Some(m) if m.finalized => RankState::Complete,
        _ => RankState::Partial("did not finalize (converted after the job)".into()),
    };
    let host = meta.map(|m| m.process.host).filter(|h| !h.is_empty());
    let (header, levels) = builder.finish(rank, source_len / coarse::BUDGET_DIVISOR);
    let trailer = Trailer { source_len, source_mtime_ns, extra_names, state, host, problems: Vec::new() };
    coarse::store(dir, rank, &header, &levels, &trailer).map(|_| ())
}

/// [`trace_format::finish_dir`] converting leftover journals with
/// [`convert_rank`] (what `mpitrace record` and `mpitrace convert` do).
pub fn finish_dir(
    dir: &Path,
    launch_command: &[String],
    keep_journals: bool,
) -> Result<trace_format::Finished, trace_format::Error> {
    trace_format::finish_dir_with(dir, launch_command, keep_journals, &convert_rank)
}
