//! The viewer's state and what it does, apart from drawing: loading,
//! zoom and pan, selection, filters, search, picking, jumps. The drawing
//! ([`crate::ui`]) reads this state and calls these methods.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use egui::Color32;
use trace_lod::Cell;

use std::sync::mpsc::Receiver;
use std::sync::Arc;

use crate::data::{start_loader, Loaded, Loader, Trace};
use crate::filter::{CallSet, Filter, On};
use crate::lanes::Lanes;
use crate::stats::{self, ProfileCol, RangeStats};
use crate::timeline::{palette, Geometry};
use crate::view::TimeView;

/// The side views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Profile,
    Collectives,
    Waits,
    Matrix,
    Histograms,
    Details,
    Problems,
    /// MPI-IO per file and access, one-sided per target and window.
    IoRma,
    /// Two traces side by side: their profiles over the coupled range.
    Compare,
}

impl Tab {
    pub const ALL: [Tab; 9] = [
        Tab::Profile,
        Tab::Collectives,
        Tab::Waits,
        Tab::Matrix,
        Tab::Histograms,
        Tab::Details,
        Tab::Problems,
        Tab::IoRma,
        Tab::Compare,
    ];
    pub fn title(self) -> &'static str {
        match self {
            Tab::Profile => "Profile",
            Tab::Collectives => "Collectives",
            Tab::Waits => "Wait states",
            Tab::Matrix => "Matrix",
            Tab::Histograms => "Histograms",
            Tab::Details => "Details",
            Tab::Problems => "Problems",
            Tab::IoRma => "I/O, RMA",
            Tab::Compare => "Compare",
        }
    }
}

/// Everything the timeline's geometry depends on.
#[derive(Clone, Debug, PartialEq)]
pub struct GeometryKey {
    pub view: TimeView,
    pub rect: egui::Rect,
    pub scroll: f32,
    pub filter: Filter,
    pub lanes_gen: u64,
    pub highlight: Option<(i32, i32)>,
    pub picked_msg: Option<u64>,
    pub dark: bool,
    pub analysed: bool,
    pub critical: bool,
    /// Whether the calls kept by `comm=`/`tag=` were known.
    pub call_set: bool,
}

/// Something picked on the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// A call: index into `Lod::ranks`, index of the call.
    Call { rank: usize, call: usize },
    /// A matched message (its id).
    Message(u64),
    /// A user region: index into `Lod::ranks`, index into the rank's
    /// regions (`Analysed::regions`).
    Region { rank: usize, region: usize },
}

/// A search result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub rank: usize,
    pub call: usize,
    pub t: i64,
}

/// What the side views' numbers were computed for: range and filter.
type StatsKey = (i64, i64, Filter);

/// Default of [`GuiApp::sync_stats_calls`].
pub const SYNC_STATS_CALLS: usize = 1_000_000;

/// Most search results kept.
pub const MAX_FOUND: usize = 10_000;

/// The whole viewer.
pub struct GuiApp {
    pub dir: PathBuf,
    pub loader: Option<Loader>,
    pub trace: Option<Trace>,
    /// Why the trace could not be opened at all.
    pub open_error: Option<String>,
    pub view: TimeView,
    /// Where the view is heading (zoom and pan animate towards it).
    pub target: TimeView,
    pub smooth: bool,
    pub scroll: f32,
    pub lane_h: f32,
    pub folded: BTreeSet<String>,
    pub lanes: Lanes,
    lanes_dirty: bool,
    pub selection: Option<(i64, i64)>,
    /// A measured interval (times, not ordered).
    pub measure: Option<(f64, f64)>,
    pub filter_text: String,
    pub filter: Filter,
    pub filter_error: Option<String>,
    pub find_text: String,
    pub found: Vec<Found>,
    pub found_pos: usize,
    /// A search running in the background (large traces).
    find_job: Option<Receiver<Vec<Found>>>,
    /// The calls kept by the filter's `comm=`/`tag=`.
    call_set: Option<Arc<CallSet>>,
    /// Those being found in the background, and for what.
    call_set_job: Option<(On, Receiver<CallSet>)>,
    pub picked: Option<Pick>,
    pub hovered: Option<Pick>,
    pub highlight: Option<(i32, i32)>,
    pub tab: Tab,
    pub sort: (ProfileCol, bool),
    pub matrix_bytes: bool,
    /// Ranks (indexes into `Lod::ranks`) whose thread lanes are folded.
    pub threads_folded: BTreeSet<usize>,
    /// Whether the critical path is drawn on the timeline.
    pub show_critical: bool,
    /// Per wait state (index into `PatternKind::ALL`): the position of the
    /// last worst-first jump in its list.
    pub worst_pos: Vec<Option<usize>>,
    stats: Option<RangeStats>,
    stats_key: Option<StatsKey>,
    /// Ranges with more calls than this get their statistics computed in
    /// the background (the window shows the previous ones meanwhile).
    pub sync_stats_calls: usize,
    /// Statistics being computed in the background, and for what.
    stats_job: Option<(StatsKey, std::sync::mpsc::Receiver<RangeStats>)>,
    pub geometry: Geometry,
    /// What [`GuiApp::geometry`] was built for (rebuilt only when it changes).
    pub geometry_key: Option<GeometryKey>,
    /// The meshes of the geometry, shared with the painter (bars, lines).
    pub meshes: (std::sync::Arc<egui::Mesh>, std::sync::Arc<egui::Mesh>),
    /// Counts layouts of the lanes.
    pub lanes_gen: u64,
    pub cells: Vec<Cell>,
    pub palette: Vec<Color32>,
    /// Milliseconds to build the last frame's geometry.
    pub build_ms: f32,
    /// A panic caught while drawing.
    pub crashed: Option<String>,
    /// The second trace shown below this one, zoomed, panned and selected
    /// together with it (times aligned at the starts of the two runs).
    pub compare: Option<Box<GuiApp>>,
    /// Accessibility label of the timeline ("timeline", or "timeline B"
    /// for the compared trace).
    pub label: &'static str,
    /// Whether the keyboard drives this timeline (not the compared one).
    pub keys: bool,
    /// Whether the Details tab shows what was picked on the compared trace.
    pub details_of_b: bool,
    /// Whether the side views show the compared trace.
    pub side_of_b: bool,
}

/// A row of the comparison of two profiles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompareRow {
    pub name: String,
    pub a_count: u64,
    pub a_time: i64,
    pub b_count: u64,
    pub b_time: i64,
}

impl CompareRow {
    /// Time of B minus time of A.
    pub fn delta(&self) -> i64 {
        self.b_time - self.a_time
    }
}

/// The views of the two traces before a frame's input, to tell which one
/// moved.
pub type Views = (TimeView, TimeView, Option<(i64, i64)>);

impl GuiApp {
    fn blank(dir: &Path) -> GuiApp {
        GuiApp {
            dir: dir.to_path_buf(),
            loader: None,
            trace: None,
            open_error: None,
            view: TimeView::new(0.0, 1.0),
            target: TimeView::new(0.0, 1.0),
            smooth: true,
            scroll: 0.0,
            lane_h: 20.0,
            folded: BTreeSet::new(),
            lanes: Lanes::default(),
            lanes_dirty: true,
            selection: None,
            measure: None,
            filter_text: String::new(),
            filter: Filter::default(),
            filter_error: None,
            find_text: String::new(),
            found: Vec::new(),
            found_pos: 0,
            find_job: None,
            call_set: None,
            call_set_job: None,
            picked: None,
            hovered: None,
            highlight: None,
            tab: Tab::Profile,
            sort: (ProfileCol::Time, true),
            matrix_bytes: true,
            show_critical: false,
            threads_folded: BTreeSet::new(),
            worst_pos: Vec::new(),
            stats: None,
            stats_key: None,
            stats_job: None,
            sync_stats_calls: SYNC_STATS_CALLS,
            geometry: Geometry::default(),
            geometry_key: None,
            lanes_gen: 0,
            meshes: Default::default(),
            cells: Vec::new(),
            palette: Vec::new(),
            build_ms: 0.0,
            crashed: None,
            compare: None,
            label: "timeline",
            keys: true,
            details_of_b: false,
            side_of_b: false,
        }
    }

    /// Starts loading `a` and `b` in the background, to be shown one above
    /// the other with coupled zoom.
    pub fn open_compare(a: &Path, b: &Path) -> GuiApp {
        let mut app = GuiApp::open(a);
        app.set_compare(GuiApp::open(b));
        app
    }

    /// Shows `other` below this trace, coupled to it.
    pub fn set_compare(&mut self, mut other: GuiApp) {
        other.label = "timeline B";
        other.keys = false;
        other.smooth = self.smooth;
        self.compare = Some(Box::new(other));
        self.couple_from_a();
    }

    /// Offset from this trace's times to the compared trace's: the
    /// difference of their starts (0 until both are loaded).
    pub fn compare_offset(&self) -> f64 {
        match (&self.trace, self.compare.as_ref().and_then(|c| c.trace.as_ref())) {
            (Some(a), Some(b)) => (b.lod.span().0 - a.lod.span().0) as f64,
            _ => 0.0,
        }
    }

    /// The views of both traces (to pass to [`GuiApp::couple`]).
    pub fn views(&self) -> (Views, Option<Views>) {
        let v = |a: &GuiApp| (a.view, a.target, a.selection);
        (v(self), self.compare.as_deref().map(v))
    }

    /// Makes the compared trace show what this one shows.
    pub fn couple_from_a(&mut self) {
        let off = self.compare_offset();
        let (view, target, sel) = (self.view, self.target, self.selection);
        if let Some(b) = &mut self.compare {
            if b.filter_text != self.filter_text {
                b.set_filter(&self.filter_text);
            }
            b.smooth = self.smooth;
            b.view = view.shifted(off);
            b.target = target.shifted(off);
            b.selection = sel.map(|(x, y)| (x + off as i64, y + off as i64));
        }
    }

    /// After input moved either trace (zoom, pan, selection), moves the
    /// other the same way; `before` is [`GuiApp::views`] from before it.
    pub fn couple(&mut self, before: (Views, Option<Views>)) {
        let off = self.compare_offset();
        let Some(b) = &self.compare else { return };
        if (self.view, self.target, self.selection) != before.0 {
            self.couple_from_a();
        } else if before.1.is_some_and(|x| x != (b.view, b.target, b.selection)) {
            let (view, target, sel) = (b.view, b.target, b.selection);
            self.view = view.shifted(-off);
            self.target = target.shifted(-off);
            self.selection = sel.map(|(x, y)| (x - off as i64, y - off as i64));
        }
    }

    /// The profiles of both traces over their (coupled) ranges, by call
    /// name, largest difference of time first; `None` until both have
    /// their numbers.
    pub fn compare_rows(&mut self) -> Option<Vec<CompareRow>> {
        let a = self.stats()?.profile.clone();
        let b = self.compare.as_mut()?.stats()?.profile.clone();
        let mut rows: Vec<CompareRow> = a
            .iter()
            .map(|r| CompareRow { name: r.name.clone(), a_count: r.count, a_time: r.time, b_count: 0, b_time: 0 })
            .collect();
        for r in &b {
            match rows.iter_mut().find(|x| x.name == r.name) {
                Some(x) => {
                    x.b_count = r.count;
                    x.b_time = r.time;
                }
                None => rows.push(CompareRow {
                    name: r.name.clone(),
                    a_count: 0,
                    a_time: 0,
                    b_count: r.count,
                    b_time: r.time,
                }),
            }
        }
        rows.sort_by(|x, y| y.delta().abs().cmp(&x.delta().abs()).then_with(|| x.name.cmp(&y.name)));
        Some(rows)
    }

    /// Starts loading `dir` in the background.
    pub fn open(dir: &Path) -> GuiApp {
        let mut app = GuiApp::blank(dir);
        app.loader = Some(start_loader(dir));
        app
    }

    /// A viewer of a trace already loaded (tests, benchmarks).
    pub fn with_trace(trace: Trace) -> GuiApp {
        let mut app = GuiApp::blank(&trace.dir.clone());
        app.set_trace(trace);
        app
    }

    fn set_trace(&mut self, trace: Trace) {
        self.palette = palette(&trace.lod);
        let (a, b) = trace.lod.span();
        self.view = TimeView::new(a as f64, b as f64).clamp(a, b);
        self.target = self.view;
        self.trace = Some(trace);
        self.lanes_dirty = true;
        self.stats_key = None;
        if !self.trace.as_ref().is_some_and(|t| t.problems().is_empty()) {
            self.tab = Tab::Problems;
        }
    }

    /// Takes what the loader finished; true if anything changed.
    pub fn poll(&mut self) -> bool {
        let other = self.compare.as_mut().is_some_and(|c| c.poll());
        if other {
            self.couple_from_a();
        }
        let Some(l) = &self.loader else { return other };
        let Some(x) = l.poll() else { return other };
        self.receive(x);
        self.couple_from_a();
        true
    }

    /// Waits for the loader to finish (tests).
    pub fn wait_loaded(&mut self, timeout: std::time::Duration) {
        while let Some(x) = self.loader.as_ref().and_then(|l| l.wait(timeout)) {
            self.receive(x);
        }
        if let Some(c) = &mut self.compare {
            c.wait_loaded(timeout);
        }
        self.couple_from_a();
    }

    fn receive(&mut self, x: Loaded) {
        match x {
            Loaded::Lod(Ok(lod), _) => self.set_trace(Trace::new(*lod)),
            Loaded::Lod(Err(e), _) => {
                self.open_error = Some(e);
                self.loader = None;
            }
            // Every call, read after the cache's coarse levels were shown
            // (same call ids, names perhaps added): the view stays.
            Loaded::Detail(Ok(lod)) => {
                if let Some(t) = &mut self.trace {
                    self.palette = palette(&lod);
                    t.lod = std::sync::Arc::new(*lod);
                    self.lanes_dirty = true;
                    self.stats_key = None;
                }
            }
            Loaded::Detail(Err(e)) => {
                self.open_error = Some(e);
                self.loader = None;
            }
            Loaded::Analyses(r) => {
                if let Some(t) = &mut self.trace {
                    match r {
                        Ok(a) => {
                            t.analysed = Some(std::sync::Arc::from(a));
                            // Thread lanes come with the analyses.
                            self.lanes_dirty = true;
                        }
                        Err(e) => t.analysis_error = Some(e),
                    }
                }
                self.stats_key = None;
                self.loader = None;
                if !self.trace.as_ref().is_some_and(|t| t.problems().is_empty()) {
                    self.tab = Tab::Problems;
                }
            }
        }
    }

    /// Whether the analyses are still loading.
    pub fn loading(&self) -> bool {
        self.loader.is_some() || self.compare.as_ref().is_some_and(|c| c.loading())
    }

    /// The lanes, laid out again if the filter or folds changed.
    pub fn layout(&mut self) {
        if !self.lanes_dirty {
            return;
        }
        if let Some(t) = &self.trace {
            let threads = t.analysed.as_ref().map(|a| &a.threads);
            self.lanes =
                Lanes::with_threads(&t.lod, &self.filter, &self.folded, self.lane_h, threads, &self.threads_folded);
        }
        self.lanes_gen += 1;
        self.lanes_dirty = false;
    }

    fn span(&self) -> (i64, i64) {
        self.trace.as_ref().map(|t| t.lod.span()).unwrap_or((0, 1))
    }
    /// Time 0 of the ruler and of the times shown: the start of the trace.
    pub fn origin(&self) -> i64 {
        self.span().0
    }

    fn go(&mut self, v: TimeView) {
        let (a, b) = self.span();
        self.target = v.clamp(a, b);
        if !self.smooth {
            self.view = self.target;
        }
    }

    /// Zooms by `factor` (< 1 zooms in) about time `at`.
    pub fn zoom(&mut self, factor: f64, at: f64) {
        self.go(self.target.zoom(factor, at));
    }

    /// Pans by `dx` pixels of a timeline `w` pixels wide.
    pub fn pan(&mut self, dx: f32, w: f32) {
        self.go(self.target.pan_px(dx, w));
    }

    /// Shows the whole trace.
    pub fn reset_view(&mut self) {
        let (a, b) = self.span();
        self.go(TimeView::new(a as f64, b as f64));
    }

    /// Shows `[t0, t1)`.
    pub fn show_range(&mut self, t0: i64, t1: i64) {
        self.go(TimeView::new(t0 as f64, t1 as f64));
    }

    /// Moves the view a step towards its target; true while moving.
    pub fn animate(&mut self, dt: f32) -> bool {
        if self.view == self.target {
            return false;
        }
        let k = (1.0 - (-dt as f64 * 18.0).exp()).clamp(0.0, 1.0);
        let (a, b) =
            (self.view.t0 + (self.target.t0 - self.view.t0) * k, self.view.t1 + (self.target.t1 - self.view.t1) * k);
        let close = ((a - self.target.t0).abs() + (b - self.target.t1).abs()) < self.target.span() * 1e-4;
        self.view = if close { self.target } else { TimeView::new(a, b) };
        !close
    }

    /// Scrolls the lanes by `dy` px within a window `h` px high.
    pub fn scroll_by(&mut self, dy: f32, h: f32) {
        self.scroll = (self.scroll + dy).clamp(0.0, (self.lanes.height() - h).max(0.0));
    }

    /// Selects `[t0, t1)` (in either order); the side views follow it.
    pub fn select(&mut self, t0: i64, t1: i64) {
        let (a, b) = (t0.min(t1), t0.max(t1));
        self.selection = (b > a).then_some((a, b));
    }

    /// The range the side views show: the selection, or the whole trace.
    pub fn range(&self) -> (i64, i64) {
        self.selection.unwrap_or_else(|| {
            let (a, b) = self.span();
            (a, b + 1)
        })
    }

    /// Sets the filter text; an unparsable one keeps the previous filter.
    pub fn set_filter(&mut self, text: &str) {
        self.filter_text = text.to_string();
        match Filter::parse(text) {
            Ok(f) => {
                if f != self.filter {
                    self.filter = f;
                    self.lanes_dirty = true;
                }
                self.filter_error = None;
            }
            Err(e) => self.filter_error = Some(e.to_string()),
        }
    }

    /// Names kept by the filter, per name id.
    pub fn kept(&self) -> Vec<bool> {
        self.trace.as_ref().map(|t| self.filter.name_mask(&t.lod.names)).unwrap_or_default()
    }

    /// Finds the calls matching `text` (filter syntax) in the whole trace
    /// and goes to the first: `Some(count)` when done at once, `None` when
    /// the trace is large and the search runs in the background (see
    /// [`GuiApp::poll_find`]).
    pub fn find(&mut self, text: &str) -> Result<Option<usize>, String> {
        self.find_text = text.to_string();
        let f = Filter::parse(text).map_err(|e| e.to_string())?;
        self.found.clear();
        self.found_pos = 0;
        self.find_job = None;
        let Some(t) = &self.trace else { return Ok(Some(0)) };
        if f.on().any() && t.analysed.is_none() {
            return Err("comm= and tag= need the analyses: still loading".into());
        }
        let calls = t.lod.calls();
        if calls as usize <= self.sync_stats_calls {
            self.found = search(t, &f);
            self.go_found(0);
            return Ok(Some(self.found.len()));
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let t = t.clone();
        std::thread::spawn(move || {
            if let Ok(found) = crate::data::guarded(|| Ok(search(&t, &f))) {
                let _ = tx.send(found);
            }
        });
        self.find_job = Some(rx);
        Ok(None)
    }

    /// Takes the results of a background search if it finished (and goes
    /// to the first); true if it did.
    pub fn poll_find(&mut self) -> bool {
        let Some(rx) = &self.find_job else { return false };
        match rx.try_recv() {
            Ok(found) => {
                self.found = found;
                self.find_job = None;
                self.go_found(0);
                true
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => false,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                self.find_job = None;
                false
            }
        }
    }

    /// Whether a search runs in the background.
    pub fn find_pending(&self) -> bool {
        self.find_job.is_some()
    }

    /// Waits for a background search (tests).
    pub fn wait_found(&mut self) {
        if let Some(rx) = self.find_job.take() {
            if let Ok(found) = rx.recv() {
                self.found = found;
                self.go_found(0);
            }
        }
    }

    /// The calls kept by the filter's `comm=`/`tag=`: `None` when it has
    /// neither, or while they are being found (after the analyses; in the
    /// background for large traces, see [`GuiApp::call_set_pending`]).
    pub fn call_set(&mut self) -> Option<Arc<CallSet>> {
        let on = self.filter.on();
        if !on.any() {
            return None;
        }
        if let Some((k, rx)) = &self.call_set_job {
            if let Ok(s) = rx.try_recv() {
                self.call_set = Some(Arc::new(s));
                self.call_set_job = None;
            } else if *k != on {
                self.call_set_job = None;
            }
        }
        if self.call_set.as_ref().is_some_and(|s| s.on == on) {
            return self.call_set.clone();
        }
        let t = self.trace.as_ref()?;
        let a = t.analysed.as_ref()?;
        if self.call_set_job.is_some() {
            return None;
        }
        let ends: usize = a.an.model.ranks.iter().map(|r| r.sends.len() + r.recvs.len() + r.colls.len()).sum();
        if ends <= self.sync_stats_calls {
            self.call_set = Some(Arc::new(CallSet::of(t, on)));
            return self.call_set.clone();
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let t = t.clone();
        std::thread::spawn(move || {
            if let Ok(s) = crate::data::guarded(|| Ok(CallSet::of(&t, on))) {
                let _ = tx.send(s);
            }
        });
        self.call_set_job = Some((on, rx));
        None
    }

    /// Whether the filter has `comm=`/`tag=` and the calls they keep are
    /// not known yet (the timeline and side views then wait for them).
    pub fn call_set_pending(&self) -> bool {
        let on = self.filter.on();
        on.any() && !self.call_set.as_ref().is_some_and(|s| s.on == on)
    }

    /// Waits for the calls kept by `comm=`/`tag=` (tests).
    pub fn wait_call_set(&mut self) -> Option<Arc<CallSet>> {
        if let Some((_, rx)) = self.call_set_job.take() {
            if let Ok(s) = rx.recv() {
                self.call_set = Some(Arc::new(s));
            }
        }
        self.call_set()
    }

    /// Goes to search result `k` (wrapping).
    pub fn go_found(&mut self, k: usize) {
        if self.found.is_empty() {
            return;
        }
        self.found_pos = k % self.found.len();
        let f = self.found[self.found_pos].clone();
        self.pick_call(f.rank, f.call);
        self.reveal_call(f.rank, f.call);
    }

    fn reveal_call(&mut self, rank: usize, call: usize) {
        let Some(t) = &self.trace else { return };
        let Some(r) = t.lod.ranks.get(rank) else { return };
        let c = r.data.call(call);
        let world = r.rank;
        let mut v = self.target;
        if c.duration() as f64 > v.span() * 0.8 {
            v = TimeView::new(c.t_start as f64, c.t_start as f64 + c.duration() as f64 * 1.5);
        }
        let mid = (c.t_start as f64 + c.t_end as f64) / 2.0;
        self.go(v.centre(mid));
        self.layout();
        let analysed = self.trace.as_ref().and_then(|t| t.analysed.clone());
        let threads = analysed.as_ref().map(|a| &a.threads);
        if let Some(y) = self.lanes.centre_at(world, c.t_start, trace_view::Edge::Start, threads) {
            self.scroll = (y - 100.0).max(0.0);
        }
    }

    /// Goes to the next worst (`forward`) or back to the previous, worse,
    /// instance of wait state `kind` (index into `PatternKind::ALL`):
    /// picks its call and brings it into view. The side views stay on Wait
    /// states, so the next press goes on (Details shows the picked call).
    pub fn jump_worst(&mut self, kind: usize, forward: bool) -> Option<trace_view::WaitJump> {
        let t = self.trace.as_ref()?;
        let a = t.analysed.as_ref()?;
        let list = a.worst.by_kind.get(kind)?;
        if self.worst_pos.len() <= kind {
            self.worst_pos.resize(kind + 1, None);
        }
        let pos = match (self.worst_pos[kind], forward) {
            (None, _) => 0,
            (Some(p), true) => p + 1,
            (Some(p), false) => p.saturating_sub(1),
        };
        let w = *list.get(pos)?;
        self.worst_pos[kind] = Some(pos);
        let li = t.lod.ranks.binary_search_by_key(&w.rank, |r| r.rank).ok()?;
        let call = t.lod.ranks[li].data.call_at(w.t_start)?;
        self.details_of_b = false;
        self.picked = Some(Pick::Call { rank: li, call });
        self.reveal_call(li, call);
        Some(w)
    }

    pub fn pick_call(&mut self, rank: usize, call: usize) {
        self.details_of_b = false;
        self.picked = Some(Pick::Call { rank, call });
        self.tab = Tab::Details;
    }

    pub fn pick_region(&mut self, rank: usize, region: usize) {
        self.details_of_b = false;
        self.picked = Some(Pick::Region { rank, region });
        self.tab = Tab::Details;
    }

    /// The user region picked: (world rank, region).
    pub fn region(&self, which: Option<Pick>) -> Option<(i32, analyzers::model::Region)> {
        let Some(Pick::Region { rank, region }) = which else { return None };
        let t = self.trace.as_ref()?;
        let world = t.lod.ranks.get(rank)?.rank;
        let r = t.analysed.as_ref()?.regions.get(usize::try_from(world).ok()?)?.get(region)?;
        Some((world, *r))
    }

    /// Shows the picked region (or call) across the timeline and selects it.
    pub fn zoom_to_picked(&mut self) {
        let span = match self.picked {
            Some(p @ Pick::Region { .. }) => self.region(Some(p)).map(|(_, r)| (r.t0, r.t1)),
            Some(Pick::Call { rank, call }) => {
                self.trace.as_ref().map(|t| t.lod.ranks[rank].data.call(call)).map(|c| (c.t_start, c.t_end))
            }
            _ => None,
        };
        if let Some((a, b)) = span.filter(|(a, b)| b > a) {
            let margin = (b - a) / 20;
            self.show_range(a - margin, b + margin);
            self.select(a, b);
        }
    }

    pub fn pick_message(&mut self, id: u64) {
        self.details_of_b = false;
        self.picked = Some(Pick::Message(id));
        self.tab = Tab::Details;
    }

    /// Goes to the other end of the picked message, or of the first
    /// message of the picked call; true if there was one.
    pub fn jump_to_partner(&mut self) -> bool {
        let Some(t) = &self.trace else { return false };
        let Some(a) = &t.analysed else { return false };
        let (id, from_send) = match self.picked {
            Some(Pick::Message(id)) => (id as usize, true),
            Some(Pick::Call { rank, call }) => {
                let r = &t.lod.ranks[rank];
                let c = r.data.call(call);
                let Some(mc) = a.model_call(r.rank, c.t_start, t.lod.name(c.name)) else { return false };
                let Some(&id) = a.messages_of(r.rank, mc).first() else { return false };
                (id, a.ends[id].0.rank as i32 == r.rank)
            }
            Some(Pick::Region { .. }) | None => return false,
        };
        let Some((rank, ts, name)) = a.partner_call(id, from_send) else { return false };
        let Some(ri) = t.lod.ranks.iter().position(|r| r.rank == rank) else { return false };
        let d = &t.lod.ranks[ri].data;
        let first = d.first_at(ts);
        let Some(ci) =
            (first..d.len()).take_while(|&i| d.call(i).t_start == ts).find(|&i| t.lod.name(d.call(i).name) == name)
        else {
            return false;
        };
        self.pick_call(ri, ci);
        self.reveal_call(ri, ci);
        true
    }

    /// Highlights the messages from `src` to `dst` (again: clears it).
    pub fn click_matrix(&mut self, src: i32, dst: i32) {
        self.highlight = if self.highlight == Some((src, dst)) { None } else { Some((src, dst)) };
    }

    /// Sets the height of a lane, px (2 to 60).
    pub fn set_lane_height(&mut self, h: f32) {
        self.lane_h = h.clamp(2.0, 60.0);
        self.lanes_dirty = true;
    }

    /// Folds the thread lanes of `rank` (index into `Lod::ranks`) into
    /// one lane, or unfolds them.
    pub fn toggle_threads(&mut self, rank: usize) {
        if !self.threads_folded.remove(&rank) {
            self.threads_folded.insert(rank);
        }
        self.lanes_dirty = true;
    }

    pub fn toggle_fold(&mut self, host: &str) {
        if !self.folded.remove(host) {
            self.folded.insert(host.to_string());
        }
        self.lanes_dirty = true;
    }

    /// The side views' numbers for the current range and filter (those
    /// of a previous range while a large one is computed: see
    /// [`GuiApp::stats_pending`]).
    pub fn stats(&mut self) -> Option<&RangeStats> {
        let only = self.call_set();
        if self.filter.on().any() && only.is_none() {
            return self.stats.as_ref();
        }
        let (a, b) = self.range();
        let key = (a, b, self.filter.clone());
        if let Some((k, rx)) = &self.stats_job {
            if let Ok(mut s) = rx.try_recv() {
                stats::sort_profile(&mut s.profile, self.sort.0, self.sort.1);
                self.stats_key = Some(k.clone());
                self.stats = Some(s);
                self.stats_job = None;
            } else if *k != key {
                self.stats_job = None;
            }
        }
        let pending = self.stats_job.as_ref().is_some_and(|(k, _)| *k == key);
        if self.stats_key.as_ref() != Some(&key) && !pending {
            let t = self.trace.as_ref()?;
            let calls: usize = t.lod.ranks.iter().map(|r| r.data.starting_in(a, b).len()).sum();
            if calls <= self.sync_stats_calls {
                let mut s = stats::compute(t, a, b, &self.filter, only.as_deref());
                stats::sort_profile(&mut s.profile, self.sort.0, self.sort.1);
                self.stats = Some(s);
                self.stats_key = Some(key);
            } else {
                let (tx, rx) = std::sync::mpsc::channel();
                let (t, f) = (t.clone(), self.filter.clone());
                std::thread::spawn(move || {
                    if let Ok(s) = crate::data::guarded(|| Ok(stats::compute(&t, a, b, &f, only.as_deref()))) {
                        let _ = tx.send(s);
                    }
                });
                self.stats_job = Some((key, rx));
            }
        }
        self.stats.as_ref()
    }

    /// Whether statistics for the current range are being computed.
    pub fn stats_pending(&self) -> bool {
        self.stats_job.is_some()
    }

    /// Waits for statistics being computed (tests, benchmarks).
    pub fn wait_stats(&mut self) {
        if let Some((k, rx)) = self.stats_job.take() {
            if let Ok(s) = rx.recv() {
                self.stats_key = Some(k);
                self.stats = Some(s);
            }
        }
        self.stats();
    }

    /// Sorts the profile by `col` (again: reverses the order).
    pub fn sort_by(&mut self, col: ProfileCol) {
        self.sort = if self.sort.0 == col { (col, !self.sort.1) } else { (col, col != ProfileCol::Name) };
        if let Some(s) = &mut self.stats {
            stats::sort_profile(&mut s.profile, self.sort.0, self.sort.1);
        }
    }

    /// Lines describing the picked (or else hovered) item.
    pub fn details(&self, which: Option<Pick>) -> Vec<(String, String)> {
        let (Some(t), Some(p)) = (&self.trace, which) else { return Vec::new() };
        let mut out = Vec::new();
        // Instants from the start of the trace, to the ns.
        let at = |t: i64| trace_view::time::fmt_exact(t - self.origin());
        match p {
            Pick::Call { rank, call } => {
                let r = &t.lod.ranks[rank];
                let c = r.data.call(call);
                let name = t.lod.name(c.name);
                out.push(("call".into(), name.to_string()));
                out.push(("rank".into(), r.rank.to_string()));
                out.push(("start".into(), at(c.t_start)));
                out.push(("duration".into(), analyzers::fmt_ns(c.duration())));
                if c.flags & trace_lod::flags::UNFINISHED != 0 {
                    out.push(("state".into(), "never returned".into()));
                }
                if c.flags & trace_lod::flags::FAILED != 0 {
                    out.push(("state".into(), "returned an error".into()));
                }
                if let Some(a) = &t.analysed {
                    if let Some(mc) = a.model_call(r.rank, c.t_start, name) {
                        let m = &a.an.model;
                        let mcall = &m.ranks[r.rank as usize].calls.at(mc as usize);
                        out.push(("call site".into(), m.site_label(mcall.site)));
                        if !a.threads.of(r.rank).is_empty() {
                            out.push(("thread".into(), mcall.thread.to_string()));
                        }
                        for id in a.messages_of(r.rank, mc).into_iter().take(8) {
                            if let Some(msg) = a.message(id) {
                                out.extend(message_lines(&msg));
                            }
                        }
                    }
                }
            }
            Pick::Message(id) => {
                if let Some(msg) = t.analysed.as_ref().and_then(|a| a.message(id as usize)) {
                    out.extend(message_lines(&msg));
                    out.push(("sent at".into(), at(msg.t_send)));
                    out.push(("received by".into(), at(msg.t_recv)));
                }
            }
            Pick::Region { rank, .. } => {
                let (Some((world, r)), Some(a)) = (self.region(Some(p)), &t.analysed) else { return out };
                out.push(("region".into(), a.an.model.name(r.name).to_string()));
                out.push(("rank".into(), world.to_string()));
                out.push(("start".into(), at(r.t0)));
                out.push(("duration".into(), analyzers::fmt_ns(r.t1 - r.t0)));
                out.push(("depth".into(), r.depth.to_string()));
                // The MPI calls inside: how many, and their time within the region.
                let d = &t.lod.ranks[rank].data;
                let inside = d.starting_in(r.t0, r.t1);
                let busy: i64 = inside.clone().map(|i| d.call(i)).map(|c| c.t_end.min(r.t1) - c.t_start).sum();
                out.push(("MPI calls".into(), inside.len().to_string()));
                let share = if r.t1 > r.t0 { busy as f64 * 100.0 / (r.t1 - r.t0) as f64 } else { 0.0 };
                out.push(("time in MPI".into(), format!("{} ({share:.0}%)", analyzers::fmt_ns(busy))));
            }
        }
        out
    }
}

fn message_lines(m: &trace_lod::messages::Msg) -> Vec<(String, String)> {
    vec![
        ("message".into(), format!("{} -> {}", m.src, m.dst)),
        ("tag".into(), m.tag.to_string()),
        ("bytes".into(), analyzers::fmt_bytes(m.bytes)),
        ("in flight".into(), analyzers::fmt_ns(m.t_recv - m.t_send)),
    ]
}

/// The calls of `trace` matching `f`: the earliest [`MAX_FOUND`] of them
/// in time, sorted by time.
pub fn search(trace: &Trace, f: &Filter) -> Vec<Found> {
    let lod = &trace.lod;
    let mask = f.name_mask(&lod.names);
    let only = f.on().any().then(|| CallSet::of(trace, f.on()));
    let mut found = Vec::new();
    for (ri, r) in lod.ranks.iter().enumerate().filter(|(_, r)| f.keeps_rank(r.rank)) {
        let d = &r.data;
        // A rank's calls come by time: its first MAX_FOUND matches are all
        // it can contribute.
        let calls: Box<dyn Iterator<Item = usize>> = match &only {
            Some(set) => Box::new(set.per_rank.get(ri).into_iter().flatten().map(|k| k.call as usize)),
            None => Box::new(0..d.len()),
        };
        let mut mine = 0;
        for i in calls {
            let c = d.call(i);
            if mask.get(c.name as usize).copied().unwrap_or(false) && c.duration() >= f.min_dur {
                found.push(Found { rank: ri, call: i, t: c.t_start });
                mine += 1;
                if mine == MAX_FOUND {
                    break;
                }
            }
        }
        // Keep memory bounded: the earliest MAX_FOUND so far.
        if found.len() >= 2 * MAX_FOUND {
            found.sort_by_key(|x| (x.t, x.rank));
            found.truncate(MAX_FOUND);
        }
    }
    found.sort_by_key(|x| (x.t, x.rank));
    found.truncate(MAX_FOUND);
    found
}
