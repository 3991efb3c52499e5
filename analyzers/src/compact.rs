//! Compact storage of a rank's calls ([`Calls`], 16 bytes per call) and
//! message ends ([`Ends`], 20 bytes per send or receive).
//!
//! A record keeps what differs from event to event (times, sequence
//! number, call indices); what repeats (a call's name, flags and site; a
//! message's communicator, peer and tag) is interned into a small per-rank
//! table the record points into. A value too wide for its narrow field is
//! never truncated: the field holds an escape code and the exact value goes
//! into the table entry (a call longer than `u32::MAX` ns or of negative
//! length; a message of 4 GiB or more, or of a negative size other than
//! the -1 of "unknown").
//!
//! Records are read as the plain [`CallEv`] and [`P2p`] values (`at`,
//! `get`, `iter`); the containers keep their records in order and index
//! them like slices.

use std::hash::Hash;

use crate::model::{CallEv, P2p};
use crate::FastMap;

/// A key that can pick its slot of an [`Intern`]'s cache cheaply.
pub trait Slot {
    /// Any well-mixed function of the key.
    fn mix(&self) -> u64;
}

/// Interns values into dense `u32` ids, with a small set-associative cache
/// in front of the map (a rank repeats a few calls and channels over and
/// over).
#[derive(Clone, Debug)]
struct Intern<K> {
    map: FastMap<K, u32>,
    cache: [[Option<(K, u32)>; WAYS]; SETS],
    /// Counts misses, to pick the way a miss replaces.
    victim: usize,
}

/// Sets of an interner's cache (the top 4 bits of a key's mix pick one).
const SETS: usize = 16;
/// Slots per set of an interner's cache.
const WAYS: usize = 4;

impl<K: Copy + Eq + Hash + Slot> Intern<K> {
    fn new() -> Intern<K> {
        Intern { map: FastMap::default(), cache: [[None; WAYS]; SETS], victim: 0 }
    }
    /// An interner that knows the entries of `table` already (kept out of
    /// line: its large frame would otherwise burden every lookup).
    #[cold]
    #[inline(never)]
    fn boxed(table: &[K]) -> Box<Intern<K>> {
        let mut i = Box::new(Intern::new());
        for (n, k) in table.iter().enumerate() {
            i.map.entry(*k).or_insert(n as u32);
        }
        i
    }
    /// The id of `k`, added to `table` if new.
    #[inline]
    fn id(&mut self, k: K, table: &mut Vec<K>) -> u32 {
        // 4-way set-associative: keys whose slots collide do not evict
        // each other at once.
        let ways = &mut self.cache[(k.mix() >> 60) as usize];
        if let Some((_, id)) = ways.iter().flatten().find(|(ck, _)| *ck == k) {
            return *id;
        }
        let id = *self.map.entry(k).or_insert_with(|| {
            table.push(k);
            table.len() as u32 - 1
        });
        self.victim = self.victim.wrapping_add(1);
        ways[self.victim % WAYS] = Some((k, id));
        id
    }
}

/// How the elements of a [`Packed`] container are stored: a record per
/// element and an entry of a shared table (interned) per distinct `Key`.
pub trait Layout {
    /// What an element reads as.
    type Item: Copy + PartialEq;
    /// The record of one element.
    type Rec: Copy + std::fmt::Debug;
    /// What elements share.
    type Key: Copy + Eq + Hash + Slot + std::fmt::Debug;
    /// Splits an element into its shared part and its record (without the
    /// key's index yet).
    fn encode(x: Self::Item) -> (Self::Key, Self::Rec);
    /// Sets the index of the record's table entry.
    fn set_key(r: &mut Self::Rec, key: u32);
    fn decode(r: &Self::Rec, table: &[Self::Key]) -> Self::Item;
}

/// Elements stored as small records pointing into a table of what they
/// share; indexed like a slice, read as values. See [`Calls`] and [`Ends`].
pub struct Packed<L: Layout> {
    recs: Vec<L::Rec>,
    table: Vec<L::Key>,
    /// Present while elements are added (dropped by [`Packed::seal`]).
    intern: Option<Box<Intern<L::Key>>>,
}

/// The calls of a rank, 16 bytes each; read as [`CallEv`] values.
pub type Calls = Packed<CallLayout>;
/// The sends or receives of a rank, 20 bytes each; read as [`P2p`] values.
pub type Ends = Packed<EndLayout>;

impl<L: Layout> Default for Packed<L> {
    fn default() -> Self {
        Packed { recs: Vec::new(), table: Vec::new(), intern: None }
    }
}

impl<L: Layout> Clone for Packed<L> {
    fn clone(&self) -> Self {
        Packed { recs: self.recs.clone(), table: self.table.clone(), intern: None }
    }
}

impl<L: Layout> std::fmt::Debug for Packed<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packed").field("recs", &self.recs).field("table", &self.table).finish()
    }
}

impl<L: Layout> PartialEq for Packed<L> {
    fn eq(&self, o: &Self) -> bool {
        self.len() == o.len() && self.iter().eq(o.iter())
    }
}

impl<L: Layout> Packed<L> {
    pub fn len(&self) -> usize {
        self.recs.len()
    }
    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }
    /// Element `i`; panics if out of range, like indexing a slice.
    #[inline]
    pub fn at(&self, i: usize) -> L::Item {
        L::decode(&self.recs[i], &self.table)
    }
    /// Element `i`, if there is one.
    #[inline]
    pub fn get(&self, i: usize) -> Option<L::Item> {
        self.recs.get(i).map(|r| L::decode(r, &self.table))
    }
    pub fn first(&self) -> Option<L::Item> {
        self.get(0)
    }
    pub fn last(&self) -> Option<L::Item> {
        self.recs.last().map(|r| L::decode(r, &self.table))
    }
    pub fn iter(&self) -> Iter<'_, L> {
        self.range(0..self.len())
    }
    /// The elements with indices in `range` (panics if out of range, like slicing).
    pub fn range(&self, range: std::ops::Range<usize>) -> Iter<'_, L> {
        Iter { table: &self.table, it: self.recs[range].iter() }
    }
    /// The index of the first element for which `pred` is false, the
    /// elements being partitioned by it (as [`slice::partition_point`]).
    pub fn partition_point(&self, mut pred: impl FnMut(L::Item) -> bool) -> usize {
        self.recs.partition_point(|r| pred(L::decode(r, &self.table)))
    }
    /// Appends an element.
    pub fn push(&mut self, x: L::Item) {
        let rec = self.encode(x);
        self.recs.push(rec);
    }
    /// Replaces element `i` (panics if out of range).
    pub fn set(&mut self, i: usize, x: L::Item) {
        let rec = self.encode(x);
        self.recs[i] = rec;
    }
    fn encode(&mut self, x: L::Item) -> L::Rec {
        let (key, mut rec) = L::encode(x);
        let table = &mut self.table;
        let intern = match &mut self.intern {
            Some(i) => i,
            None => self.intern.insert(Intern::boxed(table)),
        };
        L::set_key(&mut rec, intern.id(key, table));
        rec
    }
    /// Reserves room for `n` more elements.
    pub fn reserve(&mut self, n: usize) {
        self.recs.reserve(n);
    }
    /// Frees what adding elements needed (the interning map, spare capacity).
    pub fn seal(&mut self) {
        self.intern = None;
        self.recs.shrink_to_fit();
        self.table.shrink_to_fit();
    }
    /// Rewrites every table entry (the table may then hold duplicates).
    fn remap_table(&mut self, f: impl Fn(&mut L::Key)) {
        self.table.iter_mut().for_each(f);
        self.intern = None;
    }
    /// Bytes of memory the elements take (records and table).
    pub fn heap_bytes(&self) -> usize {
        self.recs.capacity() * std::mem::size_of::<L::Rec>() + self.table.capacity() * std::mem::size_of::<L::Key>()
    }
}

impl<L: Layout> FromIterator<L::Item> for Packed<L> {
    fn from_iter<I: IntoIterator<Item = L::Item>>(it: I) -> Self {
        let mut c = Packed::default();
        for x in it {
            c.push(x);
        }
        c.seal();
        c
    }
}

impl<'a, L: Layout> IntoIterator for &'a Packed<L> {
    type Item = L::Item;
    type IntoIter = Iter<'a, L>;
    fn into_iter(self) -> Iter<'a, L> {
        self.iter()
    }
}

/// Iterator over a [`Packed`] container, giving its elements as values.
pub struct Iter<'a, L: Layout> {
    table: &'a [L::Key],
    it: std::slice::Iter<'a, L::Rec>,
}

impl<L: Layout> Clone for Iter<'_, L> {
    fn clone(&self) -> Self {
        Iter { table: self.table, it: self.it.clone() }
    }
}

impl<L: Layout> Iterator for Iter<'_, L> {
    type Item = L::Item;
    #[inline]
    fn next(&mut self) -> Option<L::Item> {
        self.it.next().map(|r| L::decode(r, self.table))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.it.size_hint()
    }
    fn nth(&mut self, n: usize) -> Option<L::Item> {
        self.it.nth(n).map(|r| L::decode(r, self.table))
    }
}

impl<L: Layout> DoubleEndedIterator for Iter<'_, L> {
    fn next_back(&mut self) -> Option<L::Item> {
        self.it.next_back().map(|r| L::decode(r, self.table))
    }
}

impl<L: Layout> ExactSizeIterator for Iter<'_, L> {}

/// [`Iter`] over calls.
pub type CallIter<'a> = Iter<'a, CallLayout>;
/// [`Iter`] over message ends.
pub type EndIter<'a> = Iter<'a, EndLayout>;

/// The layout of [`Calls`].
pub struct CallLayout;

/// How a call is stored (opaque).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct CallRec {
    t_start: i64,
    /// `t_end - t_start`, or [`LONG`]: the duration is in the key.
    dur: u32,
    /// Index into the table of [`CallKey`]s.
    key: u32,
}

/// Duration escape: the call's duration does not fit `0..LONG`.
const LONG: u32 = u32::MAX;

/// What calls share: name, flags, site (and the duration of a call whose
/// record could not hold it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CallKey {
    name: u16,
    flags: u16,
    site: u32,
    thread: u16,
    /// The duration when the record's is [`LONG`], else 0.
    long: i64,
}

/// Odd constant of the multiplicative mixes (2^64 / golden ratio).
const MIX: u64 = 0x9e37_79b9_7f4a_7c15;

impl Slot for CallKey {
    #[inline]
    fn mix(&self) -> u64 {
        let a = self.name as u64 | (self.flags as u64) << 16 | (self.site as u64) << 32;
        (a ^ (self.long as u64).rotate_left(29) ^ (self.thread as u64).rotate_left(13)).wrapping_mul(MIX)
    }
}

impl Layout for CallLayout {
    type Item = CallEv;
    type Rec = CallRec;
    type Key = CallKey;
    #[inline]
    fn encode(c: CallEv) -> (CallKey, CallRec) {
        let d = c.t_end.wrapping_sub(c.t_start);
        let (dur, long) = if (0..LONG as i64).contains(&d) { (d as u32, 0) } else { (LONG, d) };
        (
            CallKey { name: c.name, flags: c.flags, site: c.site, thread: c.thread, long },
            CallRec { t_start: c.t_start, dur, key: 0 },
        )
    }
    #[inline]
    fn set_key(r: &mut CallRec, key: u32) {
        r.key = key;
    }
    #[inline]
    fn decode(r: &CallRec, table: &[CallKey]) -> CallEv {
        let k = &table[r.key as usize];
        let d = if r.dur == LONG { k.long } else { r.dur as i64 };
        CallEv {
            t_start: r.t_start,
            t_end: r.t_start.wrapping_add(d),
            name: k.name,
            flags: k.flags,
            site: k.site,
            thread: k.thread,
        }
    }
}

impl Calls {
    /// Start of call `i` (cheaper than [`Packed::at`]); panics if out of range.
    #[inline]
    pub fn t_start(&self, i: usize) -> i64 {
        self.recs[i].t_start
    }
    /// End of call `i` (cheaper than [`Packed::at`]); panics if out of range.
    #[inline]
    pub fn t_end(&self, i: usize) -> i64 {
        let r = &self.recs[i];
        let d = if r.dur == LONG { self.table[r.key as usize].long } else { r.dur as i64 };
        r.t_start.wrapping_add(d)
    }
    /// Number of kinds of call: distinct (name, flags, site) of the rank
    /// (and one per call whose duration did not fit 32 bits). Some may be
    /// used by no call.
    pub fn kinds(&self) -> usize {
        self.table.len()
    }
    /// Name, flags and site of kind `k` (panics if out of range).
    pub fn kind(&self, k: u32) -> (u16, u16, u32) {
        let e = &self.table[k as usize];
        (e.name, e.flags, e.site)
    }
    /// Thread of the calls of kind `k` (panics if out of range).
    pub fn kind_thread(&self, k: u32) -> u16 {
        self.table[k as usize].thread
    }
    /// Every call as (kind, start, end), in order: cheaper than
    /// [`Packed::iter`] where a pass sums per kind.
    pub fn timed_kinds(&self) -> impl Iterator<Item = (u32, i64, i64)> + '_ {
        self.recs.iter().map(|r| {
            let d = if r.dur == LONG { self.table[r.key as usize].long } else { r.dur as i64 };
            (r.key, r.t_start, r.t_start.wrapping_add(d))
        })
    }
    /// Adds `dt` to every time.
    pub fn shift(&mut self, dt: i64) {
        for r in &mut self.recs {
            r.t_start += dt;
        }
    }
    /// Whether the calls are in order of start time.
    pub fn is_sorted_by_start(&self) -> bool {
        self.recs.windows(2).all(|w| w[0].t_start <= w[1].t_start)
    }
    /// Puts the calls in the order `order` (old indices, a permutation).
    pub fn permute(&mut self, order: &[u32]) {
        self.recs = order.iter().map(|&i| self.recs[i as usize]).collect();
    }
    /// Rewrites every call's name and site (rank-local ids to trace-wide ones).
    pub fn remap(&mut self, name: impl Fn(u16) -> u16, site: impl Fn(u32) -> u32) {
        self.remap_table(|k| {
            k.name = name(k.name);
            k.site = site(k.site);
        });
    }
}

/// The layout of [`Ends`].
pub struct EndLayout;

/// How a message end is stored (opaque).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct EndRec {
    /// Index into the table of [`Chan`]s.
    chan: u32,
    seq: u32,
    /// Bytes, or [`UNKNOWN_BYTES`] (-1), or [`BIG`] (in the channel entry).
    bytes: u32,
    post: u32,
    done: u32,
}

/// Size escape: the size is in the channel entry.
const BIG: u32 = u32::MAX;
/// The size -1 ("unknown").
const UNKNOWN_BYTES: u32 = u32::MAX - 1;

/// What message ends share: communicator, other side, tag (and a size the
/// record could not hold).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Chan {
    comm: u32,
    peer: i32,
    tag: i32,
    /// The size when the record's is [`BIG`], else 0.
    big: i64,
}

impl Slot for Chan {
    #[inline]
    fn mix(&self) -> u64 {
        let a = self.comm as u64 | (self.peer as u32 as u64) << 32;
        let b = (self.tag as u32 as u64) ^ (self.big as u64).rotate_left(29);
        (a.wrapping_mul(MIX) ^ b).wrapping_mul(MIX)
    }
}

impl Layout for EndLayout {
    type Item = P2p;
    type Rec = EndRec;
    type Key = Chan;
    #[inline]
    fn encode(p: P2p) -> (Chan, EndRec) {
        let (bytes, big) = match p.bytes {
            -1 => (UNKNOWN_BYTES, 0),
            b if (0..UNKNOWN_BYTES as i64).contains(&b) => (b as u32, 0),
            b => (BIG, b),
        };
        (
            Chan { comm: p.comm, peer: p.peer, tag: p.tag, big },
            EndRec { chan: 0, seq: p.seq, bytes, post: p.post, done: p.done },
        )
    }
    #[inline]
    fn set_key(r: &mut EndRec, key: u32) {
        r.chan = key;
    }
    #[inline]
    fn decode(r: &EndRec, table: &[Chan]) -> P2p {
        let c = &table[r.chan as usize];
        let bytes = match r.bytes {
            BIG => c.big,
            UNKNOWN_BYTES => -1,
            b => b as i64,
        };
        P2p { comm: c.comm, peer: c.peer, tag: c.tag, seq: r.seq, bytes, post: r.post, done: r.done }
    }
}

impl Ends {
    /// The call that posted end `i` (cheaper than [`Packed::at`]).
    #[inline]
    pub fn post(&self, i: usize) -> u32 {
        self.recs[i].post
    }
    /// The call that completed end `i`, or [`crate::model::NONE`].
    #[inline]
    pub fn done(&self, i: usize) -> u32 {
        self.recs[i].done
    }
    /// Sets the completing call of end `i` (panics if out of range).
    pub fn set_done(&mut self, i: usize, done: u32) {
        self.recs[i].done = done;
    }
    /// Rewrites the call indices (after the calls were reordered).
    pub fn remap_calls(&mut self, f: impl Fn(u32) -> u32) {
        for r in &mut self.recs {
            r.post = f(r.post);
            r.done = f(r.done);
        }
    }
    /// Rewrites every communicator (rank-local ids to trace-wide ones).
    pub fn remap_comms(&mut self, f: impl Fn(u32) -> u32) {
        self.remap_table(|c| c.comm = f(c.comm));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NONE;

    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<CallRec>(), 16);
        assert_eq!(std::mem::size_of::<EndRec>(), 20);
    }

    #[test]
    fn calls_round_trip_at_the_range_limits() {
        let base = 1_700_000_000_000_000_000i64;
        let durs = [0, 1, LONG as i64 - 1, LONG as i64, LONG as i64 + 1, 1 << 40, -1, -(1 << 40), i64::MAX, i64::MIN];
        let want: Vec<CallEv> = durs
            .iter()
            .enumerate()
            .map(|(i, &d)| CallEv {
                t_start: if d == i64::MAX || d == i64::MIN { 0 } else { base + i as i64 },
                t_end: if d == i64::MAX || d == i64::MIN { d } else { base + i as i64 + d },
                name: if i == 8 { 0 } else { u16::MAX },
                flags: if i == 9 { u16::MAX } else { 0 },
                site: if i == 4 { u32::MAX } else { 1 },
                thread: if i == 3 { 7 } else { 0 },
            })
            .collect();
        let c: Calls = want.iter().copied().collect();
        assert_eq!(c.iter().collect::<Vec<_>>(), want);
        assert_eq!(c.iter().rev().collect::<Vec<_>>(), want.iter().rev().copied().collect::<Vec<_>>());
        for (i, w) in want.iter().enumerate() {
            assert_eq!(c.at(i), *w);
            assert_eq!(c.t_start(i), w.t_start);
        }
        // Long calls each keep their own duration; short ones share keys.
        assert!(c.table.len() < want.len());
        assert_eq!(c.get(want.len()), None);
        // The per-kind view gives the same calls.
        let kinds: Vec<CallEv> = c
            .timed_kinds()
            .map(|(k, t_start, t_end)| {
                let (name, flags, site) = c.kind(k);
                CallEv { t_start, t_end, name, flags, site, thread: c.kind_thread(k) }
            })
            .collect();
        assert_eq!(kinds, want);
        assert!((0..want.len()).all(|i| c.t_end(i) == want[i].t_end));
    }

    #[test]
    fn calls_set_shift_permute_remap() {
        let mut c: Calls = (0..5)
            .map(|i| CallEv { t_start: i * 10, t_end: i * 10 + 3, name: 1, flags: 0, site: 7, thread: 0 })
            .collect();
        c.set(2, CallEv { t_start: 20, t_end: 20 + (1 << 33), name: 1, flags: 1, site: 7, thread: 0 });
        c.shift(-5);
        assert_eq!(c.at(2), CallEv { t_start: 15, t_end: 15 + (1 << 33), name: 1, flags: 1, site: 7, thread: 0 });
        c.permute(&[4, 3, 2, 1, 0]);
        assert_eq!(c.at(0).t_start, 35);
        assert_eq!(c.at(2).t_end, 15 + (1 << 33));
        c.remap(|n| n + 10, |s| s + 100);
        assert!(c.iter().all(|x| x.name == 11 && x.site == 107));
        assert_eq!(c.partition_point(|x| x.t_start > 20), 2);
        c.push(CallEv { t_start: 99, t_end: 100, name: 11, flags: 0, site: 107, thread: 0 });
        assert_eq!(c.len(), 6);
        assert_eq!(c.last().map(|x| x.t_end), Some(100));
    }

    #[test]
    fn many_keys_evicting_each_other_from_the_cache() {
        // Far more distinct channels than cache slots, revisited in turn:
        // every end must still read back exactly, each channel stored once.
        let want: Vec<P2p> = (0..200_000u32)
            .map(|i| P2p { comm: 0, peer: (i % 97) as i32, tag: (i % 1000) as i32, seq: i, bytes: 8, post: i, done: i })
            .collect();
        let e: Ends = want.iter().copied().collect();
        assert_eq!(e.iter().collect::<Vec<_>>(), want);
        assert_eq!(e.table.len(), 97 * 1000);
    }

    #[test]
    fn ends_round_trip_at_the_range_limits() {
        let sizes =
            [0, 1, UNKNOWN_BYTES as i64 - 1, UNKNOWN_BYTES as i64, BIG as i64, 1 << 40, -1, -2, i64::MIN, i64::MAX];
        let want: Vec<P2p> = sizes
            .iter()
            .enumerate()
            .map(|(i, &b)| P2p {
                comm: if i == 3 { NONE } else { (i % 2) as u32 },
                peer: if i == 5 { i32::MIN } else { i as i32 % 3 },
                tag: if i == 6 { i32::MAX } else { 5 },
                seq: if i % 4 == 0 { NONE } else { i as u32 },
                bytes: b,
                post: i as u32,
                done: if i == 7 { NONE } else { i as u32 + 1 },
            })
            .collect();
        let mut e: Ends = want.iter().copied().collect();
        assert_eq!(e.iter().collect::<Vec<_>>(), want);
        for (i, w) in want.iter().enumerate() {
            assert_eq!(e.at(i), *w);
            assert_eq!((e.post(i), e.done(i)), (w.post, w.done));
        }
        e.set_done(7, 3);
        assert_eq!(e.at(7).done, 3);
        let mut p = e.at(2);
        p.peer = i32::MIN;
        e.set(2, p);
        assert_eq!(e.at(2), p);
        e.remap_comms(|c| if c == NONE { NONE } else { c + 4 });
        assert_eq!(e.at(1).comm, 5);
        assert_eq!(e.at(3).comm, NONE);
        e.remap_calls(|c| if c == NONE { NONE } else { c * 2 });
        assert_eq!((e.at(3).post, e.at(3).done), (6, 8));
    }
}
