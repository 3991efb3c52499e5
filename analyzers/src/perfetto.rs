//! Perfetto's native trace format: a protobuf `Trace` of `TracePacket`s,
//! written as a stream (one packet at a time, nothing of the output held
//! in memory), with names, categories, annotation keys, call sites and
//! communicator labels interned once per trace.
//!
//! Layout, as in the JSON export ([`crate::export::write_chrome`]): one
//! process track per rank (pid = rank + 1, since Perfetto reserves pid 0
//! for the idle task; named "rank N"), one thread track per thread that
//! made MPI calls (named "thread T"). Every MPI call is a slice (a
//! `TYPE_SLICE_BEGIN` and a `TYPE_SLICE_END` event) with its site and, for
//! point-to-point and collective calls, peer, tag, bytes and communicator
//! as debug annotations; user regions are slices in category "region" on
//! thread 0. A matched message is a flow from the call that posted the send
//! to the call that completed the receive. Timestamps are nanoseconds from
//! the start of the trace.
//!
//! The field numbers are those of Perfetto's published schema
//! (`protos/perfetto/trace/trace_packet.proto`, `track_event/*.proto`,
//! `interned_data/interned_data.proto`); the encoder is the few lines of
//! protobuf wire format this needs.

use std::io::{self, Write};

use crate::export::{posted_by_call, Exported, Selection};
use crate::matching::Matching;
use crate::model::Model;

/// Field numbers of the messages written.
mod field {
    pub const TRACE_PACKET: u32 = 1;
    // TracePacket
    pub const TIMESTAMP: u32 = 8;
    pub const SEQUENCE_ID: u32 = 10;
    pub const TRACK_EVENT: u32 = 11;
    pub const INTERNED_DATA: u32 = 12;
    pub const SEQUENCE_FLAGS: u32 = 13;
    pub const TRACK_DESCRIPTOR: u32 = 60;
    // TrackDescriptor
    pub const UUID: u32 = 1;
    pub const TRACK_NAME: u32 = 2;
    pub const PROCESS: u32 = 3;
    pub const THREAD: u32 = 4;
    pub const PARENT_UUID: u32 = 5;
    // ProcessDescriptor / ThreadDescriptor
    pub const PID: u32 = 1;
    pub const TID: u32 = 2;
    pub const THREAD_NAME: u32 = 5;
    pub const PROCESS_NAME: u32 = 6;
    // TrackEvent
    pub const CATEGORY_IIDS: u32 = 3;
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    pub const TYPE: u32 = 9;
    pub const NAME_IID: u32 = 10;
    pub const TRACK_UUID: u32 = 11;
    pub const FLOW_IDS: u32 = 47;
    pub const TERMINATING_FLOW_IDS: u32 = 48;
    // DebugAnnotation
    pub const ANNOTATION_NAME_IID: u32 = 1;
    pub const INT_VALUE: u32 = 4;
    pub const STRING_VALUE_IID: u32 = 17;
    // InternedData
    pub const EVENT_CATEGORIES: u32 = 1;
    pub const EVENT_NAMES: u32 = 2;
    pub const ANNOTATION_NAMES: u32 = 3;
    pub const ANNOTATION_STRINGS: u32 = 29;
    // EventCategory, EventName, DebugAnnotationName, InternedString
    pub const IID: u32 = 1;
    pub const IID_NAME: u32 = 2;
}

/// TrackEvent.Type.
const SLICE_BEGIN: u64 = 1;
const SLICE_END: u64 = 2;
/// TracePacket.SequenceFlags.
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
/// The one packet sequence every packet belongs to.
const SEQUENCE: u64 = 1;
/// Interned categories.
const CAT_MPI: u64 = 1;
const CAT_REGION: u64 = 2;
/// Interned debug annotation names, in this order from iid 1.
const KEYS: [&str; 5] = ["site", "peer", "tag", "bytes", "comm"];
const KEY_SITE: u64 = 1;
const KEY_PEER: u64 = 2;
const KEY_TAG: u64 = 3;
const KEY_BYTES: u64 = 4;
const KEY_COMM: u64 = 5;

fn varint(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

fn uint(b: &mut Vec<u8>, f: u32, v: u64) {
    varint(b, (f as u64) << 3);
    varint(b, v);
}

fn fixed64(b: &mut Vec<u8>, f: u32, v: u64) {
    varint(b, ((f as u64) << 3) | 1);
    b.extend_from_slice(&v.to_le_bytes());
}

fn bytes(b: &mut Vec<u8>, f: u32, v: &[u8]) {
    varint(b, ((f as u64) << 3) | 2);
    varint(b, v.len() as u64);
    b.extend_from_slice(v);
}

/// Appends `inner` to `b` as length-delimited field `f` and empties it.
fn nested(b: &mut Vec<u8>, f: u32, inner: &mut Vec<u8>) {
    bytes(b, f, inner);
    inner.clear();
}

/// An interned entry (`iid`, `name`) into `b` as field `f`.
fn interned(b: &mut Vec<u8>, f: u32, iid: u64, name: &str, scratch: &mut Vec<u8>) {
    uint(scratch, field::IID, iid);
    bytes(scratch, field::IID_NAME, name.as_bytes());
    nested(b, f, scratch);
}

/// Track uuids: a rank's process track, and its threads' tracks below it.
fn process_uuid(rank: i32) -> u64 {
    (rank as u64 + 1) << 17
}
fn thread_uuid(rank: i32, thread: u16) -> u64 {
    process_uuid(rank) | (thread as u64 + 1)
}

/// A flow a call starts or ends.
#[derive(Clone, Copy)]
struct Flow {
    call: u32,
    id: u64,
    terminating: bool,
}

/// The packets, one at a time, with the interning state of the sequence.
struct Out<'w, W: Write> {
    w: &'w mut W,
    packet: Vec<u8>,
    event: Vec<u8>,
    inner: Vec<u8>,
    interned: Vec<u8>,
    scratch: Vec<u8>,
    /// Whether each name, site and communicator label was interned.
    name_sent: Vec<bool>,
    site_sent: Vec<bool>,
    comm_sent: Vec<bool>,
}

impl<W: Write> Out<'_, W> {
    /// Writes the packet built in `self.packet` (with the interned data
    /// gathered for it) as one `Trace.packet`.
    fn flush_packet(&mut self, flags: u64) -> io::Result<()> {
        uint(&mut self.packet, field::SEQUENCE_ID, SEQUENCE);
        if !self.interned.is_empty() {
            nested(&mut self.packet, field::INTERNED_DATA, &mut self.interned);
        }
        if flags != 0 {
            uint(&mut self.packet, field::SEQUENCE_FLAGS, flags);
        }
        self.scratch.clear();
        varint(&mut self.scratch, ((field::TRACE_PACKET as u64) << 3) | 2);
        varint(&mut self.scratch, self.packet.len() as u64);
        self.w.write_all(&self.scratch)?;
        self.w.write_all(&self.packet)?;
        self.scratch.clear();
        self.packet.clear();
        Ok(())
    }

    fn intern_name(&mut self, m: &Model, name: u16) -> u64 {
        let iid = name as u64 + 1;
        if !self.name_sent[name as usize] {
            self.name_sent[name as usize] = true;
            interned(&mut self.interned, field::EVENT_NAMES, iid, m.name(name), &mut self.scratch);
        }
        iid
    }

    /// String iids: sites from 1, communicator labels after them.
    fn intern_site(&mut self, m: &Model, site: u32) -> u64 {
        let iid = site as u64 + 1;
        if !self.site_sent[site as usize] {
            self.site_sent[site as usize] = true;
            interned(&mut self.interned, field::ANNOTATION_STRINGS, iid, &m.site_label(site), &mut self.scratch);
        }
        iid
    }

    fn intern_comm(&mut self, m: &Model, comm: u32) -> Option<u64> {
        let c = comm as usize;
        if c >= self.comm_sent.len() {
            return None;
        }
        let iid = self.site_sent.len() as u64 + 1 + comm as u64;
        if !self.comm_sent[c] {
            self.comm_sent[c] = true;
            interned(&mut self.interned, field::ANNOTATION_STRINGS, iid, &m.comm_label(comm), &mut self.scratch);
        }
        Some(iid)
    }

    fn annotation_int(&mut self, key: u64, v: i64) {
        uint(&mut self.inner, field::ANNOTATION_NAME_IID, key);
        uint(&mut self.inner, field::INT_VALUE, v as u64);
        nested(&mut self.event, field::DEBUG_ANNOTATIONS, &mut self.inner);
    }

    fn annotation_str(&mut self, key: u64, iid: u64) {
        uint(&mut self.inner, field::ANNOTATION_NAME_IID, key);
        uint(&mut self.inner, field::STRING_VALUE_IID, iid);
        nested(&mut self.event, field::DEBUG_ANNOTATIONS, &mut self.inner);
    }

    /// Writes the track event built in `self.event` at `ts`.
    fn event(&mut self, ts: u64, kind: u64, track: u64) -> io::Result<()> {
        uint(&mut self.event, field::TYPE, kind);
        uint(&mut self.event, field::TRACK_UUID, track);
        uint(&mut self.packet, field::TIMESTAMP, ts);
        nested(&mut self.packet, field::TRACK_EVENT, &mut self.event);
        self.flush_packet(SEQ_NEEDS_INCREMENTAL_STATE)
    }

    fn track(&mut self, uuid: u64, parent: Option<u64>, name: &str, desc: (u32, &[(u32, u64)], u32)) -> io::Result<()> {
        let (kind, ids, name_field) = desc;
        for &(f, v) in ids {
            uint(&mut self.inner, f, v);
        }
        bytes(&mut self.inner, name_field, name.as_bytes());
        uint(&mut self.event, field::UUID, uuid);
        if let Some(p) = parent {
            uint(&mut self.event, field::PARENT_UUID, p);
        }
        bytes(&mut self.event, field::TRACK_NAME, name.as_bytes());
        nested(&mut self.event, kind, &mut self.inner);
        nested(&mut self.packet, field::TRACK_DESCRIPTOR, &mut self.event);
        self.flush_packet(0)
    }
}

/// Writes the Perfetto protobuf trace of the part of `m` that `sel`
/// selects, with the messages of `mt` between calls it writes as flows.
pub fn write_perfetto(m: &Model, mt: &Matching, sel: &Selection, w: &mut impl Write) -> io::Result<Exported> {
    let (t0, _) = m.span();
    let ts = |t: i64| (t - t0).max(0) as u64;
    let mut n = Exported::default();
    // The flows each rank's calls start and end, by call index.
    // Flows are made only between calls the selection writes, so every flow
    // is met in the walk over the written calls below.
    let mut flows: Vec<Vec<Flow>> = vec![Vec::new(); m.ranks.len()];
    for msg in mt.messages(m) {
        let (s, d) = (msg.send.rank as usize, msg.recv.rank as usize);
        let done = m.ranks[d].recvs.at(msg.recv.idx as usize).done;
        let post = m.ranks[s].sends.at(msg.send.idx as usize).post;
        if msg.recv_end.is_none() || !sel.call_of(m, s, post as usize) || !sel.call_of(m, d, done as usize) {
            continue;
        }
        n.messages += 1;
        flows[s].push(Flow { call: post, id: n.messages, terminating: false });
        flows[d].push(Flow { call: done, id: n.messages, terminating: true });
    }
    let mut o = Out {
        w,
        packet: Vec::new(),
        event: Vec::new(),
        inner: Vec::new(),
        interned: Vec::new(),
        scratch: Vec::new(),
        name_sent: vec![false; m.names.len()],
        site_sent: vec![false; m.sites.len()],
        comm_sent: vec![false; m.comms.len()],
    };
    // The sequence starts with its fixed interned data.
    interned(&mut o.interned, field::EVENT_CATEGORIES, CAT_MPI, "mpi", &mut o.scratch);
    interned(&mut o.interned, field::EVENT_CATEGORIES, CAT_REGION, "region", &mut o.scratch);
    for (i, k) in KEYS.iter().enumerate() {
        interned(&mut o.interned, field::ANNOTATION_NAMES, i as u64 + 1, k, &mut o.scratch);
    }
    uint(&mut o.packet, field::TIMESTAMP, 0);
    o.flush_packet(SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE)?;
    for (ri, r) in m.ranks.iter().enumerate() {
        if !sel.rank(r.rank) {
            continue;
        }
        let pid = r.rank as u64 + 1;
        let name = format!("rank {}", r.rank);
        o.track(process_uuid(r.rank), None, &name, (field::PROCESS, &[(field::PID, pid)], field::PROCESS_NAME))?;
        let mut threads: Vec<u16> = (0..r.calls.kinds() as u32).map(|k| r.calls.kind_thread(k)).collect();
        threads.push(0);
        threads.sort_unstable();
        threads.dedup();
        for &t in &threads {
            // Thread ids are global in Perfetto: the rank's pid in the high bits.
            let tid = (pid << 16) | t as u64;
            let name = format!("thread {t}");
            o.track(
                thread_uuid(r.rank, t),
                Some(process_uuid(r.rank)),
                &name,
                (field::THREAD, &[(field::PID, pid), (field::TID, tid)], field::THREAD_NAME),
            )?;
        }
        let fl = &mut flows[ri];
        fl.sort_unstable_by_key(|f| f.call);
        let mut next_flow = 0;
        let posted = posted_by_call(r);
        let mut regions = r.regions.iter().filter(|g| sel.instant(m, g.t)).peekable();
        for (ci, c) in r.calls.iter().enumerate() {
            // Region marks up to this call's start come first, so that
            // regions enclose the calls made in them.
            while let Some(g) = regions.next_if(|g| g.t <= c.t_start) {
                write_region(&mut o, m, r.rank, g, ts(g.t))?;
            }
            if !sel.call(m, c.t_start, c.t_end) {
                continue;
            }
            let iid = o.intern_name(m, c.name);
            let site = o.intern_site(m, c.site);
            uint(&mut o.event, field::NAME_IID, iid);
            uint(&mut o.event, field::CATEGORY_IIDS, CAT_MPI);
            o.annotation_str(KEY_SITE, site);
            if let Some((peer, tag, nbytes, comm)) = posted[ci] {
                if peer >= 0 {
                    o.annotation_int(KEY_PEER, peer as i64);
                }
                if let Some(t) = tag.filter(|&t| t != i32::MIN) {
                    o.annotation_int(KEY_TAG, t as i64);
                }
                if nbytes >= 0 {
                    o.annotation_int(KEY_BYTES, nbytes);
                }
                if let Some(ciid) = o.intern_comm(m, comm) {
                    o.annotation_str(KEY_COMM, ciid);
                }
            }
            while next_flow < fl.len() && fl[next_flow].call as usize == ci {
                let f = fl[next_flow];
                let which = if f.terminating { field::TERMINATING_FLOW_IDS } else { field::FLOW_IDS };
                fixed64(&mut o.event, which, f.id);
                next_flow += 1;
            }
            let track = thread_uuid(r.rank, c.thread);
            o.event(ts(c.t_start), SLICE_BEGIN, track)?;
            o.event(ts(c.t_end.max(c.t_start)), SLICE_END, track)?;
            n.slices += 1;
        }
        for g in regions {
            write_region(&mut o, m, r.rank, g, ts(g.t))?;
        }
    }
    o.w.flush()?;
    Ok(n)
}

fn write_region<W: Write>(
    o: &mut Out<'_, W>,
    m: &Model,
    rank: i32,
    g: &crate::model::RegionEv,
    t: u64,
) -> io::Result<()> {
    if g.begin {
        let iid = o.intern_name(m, g.name);
        uint(&mut o.event, field::NAME_IID, iid);
        uint(&mut o.event, field::CATEGORY_IIDS, CAT_REGION);
        o.event(t, SLICE_BEGIN, thread_uuid(rank, 0))
    } else {
        o.event(t, SLICE_END, thread_uuid(rank, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_format() {
        let mut b = Vec::new();
        varint(&mut b, 300);
        assert_eq!(b, [0xac, 0x02]);
        b.clear();
        uint(&mut b, 60, 1);
        // Key (60 << 3 | 0) = 480 as a varint, then 1.
        assert_eq!(b, [0xe0, 0x03, 0x01]);
        b.clear();
        fixed64(&mut b, 47, 5);
        assert_eq!(b, [0xf9, 0x02, 5, 0, 0, 0, 0, 0, 0, 0]);
        b.clear();
        bytes(&mut b, 2, b"ab");
        assert_eq!(b, [0x12, 2, b'a', b'b']);
    }

    #[test]
    fn uuids_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        for r in 0..100 {
            assert!(seen.insert(process_uuid(r)));
            for t in [0u16, 1, 7, u16::MAX] {
                assert!(seen.insert(thread_uuid(r, t)));
            }
        }
    }
}
