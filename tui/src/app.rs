//! The state of the viewer and everything that changes it (keys, mouse,
//! background loading). Drawing is in [`crate::ui`]; nothing here draws.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use trace_lod::{Call, Lod};

use crate::data::{start_loader, Analysed, Loaded, Loader};
use crate::keys::{self, Action};
use crate::search::{Filter, SearchIndex, BLOCK};
use crate::view::{fmt_dur, fmt_time, View};
use analyzers::model::Region;
use analyzers::waitstates::PatternKind;

/// The panels, in tab order.
pub const PANELS: [&str; 8] =
    ["Details", "Profile", "Collectives", "Wait states", "Matrix", "Info", "I/O, RMA", "Call paths"];
pub const INFO_PANEL: usize = 5;
/// MPI-IO and one-sided communication.
pub const IO_RMA_PANEL: usize = 6;
/// The panel of the call-tree profile and the hardware counters.
pub const CALL_PATHS_PANEL: usize = 7;

/// Columns the profile can be sorted by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    Time,
    Calls,
    Bytes,
    Name,
}

impl SortKey {
    pub fn next(self) -> SortKey {
        match self {
            SortKey::Time => SortKey::Calls,
            SortKey::Calls => SortKey::Bytes,
            SortKey::Bytes => SortKey::Name,
            SortKey::Name => SortKey::Time,
        }
    }
    pub fn title(self) -> &'static str {
        match self {
            SortKey::Time => "time",
            SortKey::Calls => "calls",
            SortKey::Bytes => "bytes",
            SortKey::Name => "name",
        }
    }
}

/// A group of ranks (a host, or a block of ranks) that can be folded into one row.
#[derive(Clone, Debug)]
pub struct Group {
    pub name: String,
    /// Indexes into `Lod::ranks`.
    pub members: Vec<usize>,
    pub folded: bool,
}

/// A row of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// Index into `Lod::ranks`.
    Rank(usize),
    /// A folded group (index into `App::groups`).
    Group(usize),
    /// One thread of a rank that called MPI from several threads: index
    /// into `Lod::ranks`, lane of `Analysed::threads`.
    Thread(usize, usize),
}

/// Smallest terminal the viewer draws in.
pub const MIN_SIZE: (u16, u16) = (60, 16);

/// Where things are on the screen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Geometry {
    pub title: Rect,
    /// The time axis (over the timeline columns only).
    pub axis: Rect,
    /// The rank labels.
    pub labels: Rect,
    /// The timeline cells.
    pub timeline: Rect,
    pub panel: Option<Rect>,
    pub status: Rect,
    pub too_small: bool,
}

#[derive(Clone, Copy, Debug)]
enum Drag {
    Pan { x: u16, view: View },
    Select { t: i64 },
}

/// The viewer.
pub struct App {
    pub dir: PathBuf,
    pub lod: Option<Lod>,
    pub lod_error: Option<String>,
    pub lod_time: Option<Duration>,
    pub an: Option<Box<Analysed>>,
    pub an_error: Option<String>,
    pub loader: Option<Loader>,
    pub view: View,
    pub cursor_t: i64,
    /// Index into [`App::rows`].
    pub cursor_row: usize,
    /// First row shown.
    pub scroll: usize,
    pub mark: Option<i64>,
    pub groups: Vec<Group>,
    pub panel: usize,
    pub panel_visible: bool,
    pub panel_scroll: usize,
    pub sort: SortKey,
    pub sort_desc: bool,
    pub filter: Filter,
    /// The search prompt's text while it is open.
    pub prompt: Option<String>,
    pub help: bool,
    pub help_scroll: usize,
    /// Whether user regions are drawn (a band above each rank's calls).
    pub show_regions: bool,
    /// Lod ranks whose thread lanes are folded into one row.
    pub threads_folded: std::collections::BTreeSet<usize>,
    /// Whether the critical path is drawn (`x`).
    pub show_critical: bool,
    /// The wait state `v`/`V` jump through (index into `PatternKind::ALL`).
    pub wait_kind: usize,
    /// Position of the last worst-first jump in its list.
    pub wait_pos: Option<usize>,
    /// Built on the first search.
    search_index: Option<SearchIndex>,
    /// A message for the status line.
    pub message: Option<String>,
    pub quit: bool,
    /// Asked to suspend (Ctrl-Z); the terminal loop does it.
    pub suspend: bool,
    /// Show only the last this many ns when the trace opens (see [`App::show_last`]).
    last: Option<i64>,
    /// Size of the terminal.
    pub size: (u16, u16),
    drag: Option<Drag>,
}

impl App {
    /// Opens `dir`, loading it in the background.
    pub fn open(dir: &Path) -> App {
        let mut app = App::empty(dir);
        app.loader = Some(start_loader(dir));
        app
    }

    fn empty(dir: &Path) -> App {
        App {
            dir: dir.to_path_buf(),
            lod: None,
            lod_error: None,
            lod_time: None,
            an: None,
            an_error: None,
            loader: None,
            view: View::new(0, 1000),
            cursor_t: 0,
            cursor_row: 0,
            scroll: 0,
            mark: None,
            groups: Vec::new(),
            panel: 0,
            panel_visible: true,
            panel_scroll: 0,
            sort: SortKey::Time,
            sort_desc: true,
            filter: Filter::default(),
            prompt: None,
            help: false,
            help_scroll: 0,
            show_regions: true,
            show_critical: false,
            threads_folded: Default::default(),
            wait_kind: 0,
            wait_pos: None,
            search_index: None,
            message: None,
            quit: false,
            suspend: false,
            last: None,
            size: (80, 24),
            drag: None,
        }
    }

    /// A viewer of an already opened level of detail (and analyses).
    pub fn with(lod: Lod, an: Option<Analysed>) -> App {
        let mut app = App::empty(&lod.dir.clone());
        app.set_lod(lod);
        app.an = an.map(Box::new);
        app
    }

    /// Takes what the background loader finished; returns whether
    /// anything changed.
    pub fn poll(&mut self) -> bool {
        let mut got = Vec::new();
        if let Some(l) = &self.loader {
            while let Some(x) = l.poll() {
                got.push(x);
            }
        }
        let changed = !got.is_empty();
        for x in got {
            self.take(x);
        }
        changed
    }

    /// Waits until loading is over (tests, benchmarks).
    pub fn wait_loaded(&mut self) {
        while self.loading() {
            let Some(l) = &self.loader else { break };
            match l.wait(Duration::from_secs(600)) {
                Some(x) => self.take(x),
                None => self.loader = None,
            }
        }
    }

    /// Waits up to `timeout` for the next thing the loader finishes and
    /// takes it; false if nothing came.
    pub fn wait_one(&mut self, timeout: Duration) -> bool {
        let Some(x) = self.loader.as_ref().and_then(|l| l.wait(timeout)) else { return false };
        self.take(x);
        true
    }

    /// Whether something is still being loaded.
    pub fn loading(&self) -> bool {
        self.loader.is_some()
            && self.lod_error.is_none()
            && (self.lod.is_none() || (self.an.is_none() && self.an_error.is_none()))
    }

    fn take(&mut self, x: Loaded) {
        match x {
            Loaded::Lod(Ok(lod), t) => {
                self.lod_time = Some(t);
                self.set_lod(*lod);
            }
            Loaded::Lod(Err(e), _) => self.lod_error = Some(e),
            // Every call, read after the cache's coarse levels were shown:
            // the view stays.
            Loaded::Detail(Ok(lod)) => {
                // A search index built over the coarse levels held no calls.
                self.search_index = None;
                self.lod = Some(*lod);
            }
            Loaded::Detail(Err(e)) => self.lod_error = Some(e),
            Loaded::Analyses(Ok(a)) => {
                self.an = Some(a);
                // Rows may take two lines now (user regions).
                self.set_row(self.cursor_row);
            }
            Loaded::Analyses(Err(e)) => self.an_error = Some(e),
        }
    }

    /// Shows only the last `ns` of the trace (all of it if shorter), now or
    /// when it has loaded: `mpitrace top`'s `t`, the last minutes of a
    /// running job.
    pub fn show_last(&mut self, ns: i64) {
        self.last = Some(ns);
        if let Some(lod) = &self.lod {
            let (lo, hi) = lod.span();
            self.apply_last(lo, hi);
        }
    }

    fn apply_last(&mut self, lo: i64, hi: i64) {
        if let Some(w) = self.last.filter(|&w| w > 0 && hi - lo > w) {
            self.view = View::new(hi - w, hi + w / 100);
            self.cursor_t = hi - w;
        }
    }

    fn set_lod(&mut self, lod: Lod) {
        let (lo, hi) = lod.span();
        self.view = View::new(lo - (hi - lo) / 100, hi + (hi - lo) / 100);
        self.cursor_t = lo;
        self.apply_last(lo, hi);
        self.groups = make_groups(&lod);
        if !lod.problems.is_empty() {
            self.panel = INFO_PANEL;
        }
        self.lod = Some(lod);
    }

    /// The rows of the timeline (groups folded, filtered ranks hidden, a
    /// rank whose calls came from several threads as one row per thread
    /// unless its threads are folded).
    pub fn rows(&self) -> Vec<Row> {
        let Some(lod) = &self.lod else { return Vec::new() };
        let shown = |i: &usize| self.filter.rank_matches(lod.ranks[*i].rank);
        let mut out = Vec::new();
        if self.groups.is_empty() {
            (0..lod.ranks.len()).filter(shown).for_each(|i| self.push_rank(&mut out, i));
            return out;
        }
        for (g, grp) in self.groups.iter().enumerate() {
            if grp.folded {
                if grp.members.iter().any(shown) {
                    out.push(Row::Group(g));
                }
            } else {
                grp.members.iter().copied().filter(shown).for_each(|i| self.push_rank(&mut out, i));
            }
        }
        out
    }

    /// The rows of lod rank `i`: its thread lanes, or the rank itself.
    fn push_rank(&self, out: &mut Vec<Row>, i: usize) {
        let lanes = self.thread_lanes(i);
        if lanes.is_empty() || self.threads_folded.contains(&i) {
            out.push(Row::Rank(i));
        } else {
            out.extend(lanes.iter().map(|&(_, lane)| Row::Thread(i, lane)));
        }
    }

    /// The thread lanes of lod rank `i` as (thread, lane); empty when it
    /// called MPI from one thread (or before the analyses are there).
    pub fn thread_lanes(&self, i: usize) -> &[(u16, usize)] {
        match (&self.lod, self.an.as_deref()) {
            (Some(lod), Some(an)) => an.threads.of(lod.ranks[i].rank),
            _ => &[],
        }
    }

    /// Width of the rank labels.
    pub fn label_width(&self) -> u16 {
        let Some(lod) = &self.lod else { return 6 };
        let mut longest_rank = lod.ranks.last().map(|r| format!("r{}", r.rank).len()).unwrap_or(2);
        if let Some(an) = self.an.as_deref().filter(|an| an.threads.any()) {
            // "r12 t3": the rank, a space, the thread.
            longest_rank += 3 + an.threads.lod.ranks.len().to_string().len();
        }
        let longest_group = self.groups.iter().map(|g| g.name.chars().count() + 1).max().unwrap_or(0);
        (longest_rank.max(longest_group) + 2).clamp(5, 14) as u16
    }

    /// The layout of a screen of size `area`.
    pub fn geometry(&self, area: Rect) -> Geometry {
        let mut g = Geometry::default();
        if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
            g.too_small = true;
            return g;
        }
        let (x, w) = (area.x, area.width);
        g.title = Rect::new(x, area.y, w, 1);
        g.status = Rect::new(x, area.y + area.height - 1, w, 1);
        let body = area.height - 3;
        let panel_h = if self.panel_visible { (area.height * 2 / 5).clamp(7, 18).min(body - 3) } else { 0 };
        let tl_h = body - panel_h;
        let lw = self.label_width();
        g.axis = Rect::new(x + lw, area.y + 1, w - lw, 1);
        g.labels = Rect::new(x, area.y + 2, lw, tl_h);
        g.timeline = Rect::new(x + lw, area.y + 2, w - lw, tl_h);
        if panel_h > 0 {
            g.panel = Some(Rect::new(x, area.y + 2 + tl_h, w, panel_h));
        }
        g
    }

    fn geo(&self) -> Geometry {
        self.geometry(Rect::new(0, 0, self.size.0, self.size.1))
    }

    fn columns(&self) -> usize {
        (self.geo().timeline.width as usize).max(1)
    }

    /// Screen lines per timeline row: 2 while user regions are drawn (the
    /// band above the calls), else 1.
    pub fn row_lines(&self) -> usize {
        if self.show_regions && self.an.as_ref().is_some_and(|a| a.has_regions) {
            2
        } else {
            1
        }
    }

    /// Number of timeline rows on the screen.
    pub fn page(&self) -> usize {
        (self.geo().timeline.height as usize / self.row_lines()).max(1)
    }

    fn span(&self) -> (i64, i64) {
        self.lod.as_ref().map(|l| l.span()).unwrap_or((0, 1000))
    }

    fn set_view(&mut self, v: View) {
        let (lo, hi) = self.span();
        self.view = v.clamp(lo, hi.max(lo + 1));
    }

    /// Time at the middle of column `c`.
    fn col_time(&self, c: i64) -> i64 {
        let n = self.columns();
        let c = c.clamp(0, n as i64 - 1) as usize;
        (self.view.col_start(c, n) + self.view.col_start(c + 1, n)) / 2
    }

    /// Column of the cursor.
    pub fn cursor_col(&self) -> i64 {
        self.view.col_of(self.cursor_t, self.columns())
    }

    fn move_cursor_cols(&mut self, d: i64) {
        let n = self.columns() as i64;
        let c = self.cursor_col().clamp(-1, n) + d;
        if c < 0 {
            self.set_view(self.view.pan(-0.25));
        } else if c >= n {
            self.set_view(self.view.pan(0.25));
        }
        let w = self.view.span() as f64 / n as f64;
        self.cursor_t = (self.cursor_t as f64 + d as f64 * w).round() as i64;
        let c = self.cursor_col().clamp(0, n - 1);
        self.cursor_t = self.col_time(c);
    }

    /// Moves the cursor to row `r`, scrolling so it is visible.
    pub fn set_row(&mut self, r: usize) {
        let n = self.rows().len();
        self.cursor_row = r.min(n.saturating_sub(1));
        let page = self.page();
        if self.cursor_row < self.scroll {
            self.scroll = self.cursor_row;
        } else if self.cursor_row >= self.scroll + page {
            self.scroll = self.cursor_row + 1 - page;
        }
        self.scroll = self.scroll.min(n.saturating_sub(page));
    }

    /// The row of lod rank `i` at time `t` (the lane of the thread running
    /// a call there, if its threads have lanes), unfolding its group if
    /// needed.
    fn row_of_rank(&mut self, i: usize, t: i64) -> Option<usize> {
        if let Some(g) = self.groups.iter_mut().find(|g| g.members.contains(&i)) {
            g.folded = false;
        }
        let rows = self.rows();
        let busy = |lane: usize| self.an.as_deref().is_some_and(|an| an.threads.data(lane).call_at(t).is_some());
        rows.iter()
            .position(|r| matches!(*r, Row::Thread(x, lane) if x == i && busy(lane)))
            .or_else(|| rows.iter().position(|r| matches!(*r, Row::Rank(x) | Row::Thread(x, _) if x == i)))
    }

    /// Puts the cursor on call `call` of lod rank `i` and brings it into view.
    pub fn goto_call(&mut self, i: usize, call: usize) {
        let Some(c) = self.lod.as_ref().map(|l| l.ranks[i].data.call(call)) else { return };
        self.goto(i, c.t_start, Some((c.t_start, c.t_end)));
    }

    /// Puts the cursor at `t` on lod rank `i`; `range` is what should be
    /// in view (zooming out if it does not fit, zooming in if it is lost
    /// in a wide view).
    fn goto(&mut self, i: usize, t: i64, range: Option<(i64, i64)>) {
        if let Some(r) = self.row_of_rank(i, t) {
            self.set_row(r);
        }
        self.cursor_t = t;
        match range {
            Some((a, b)) if b - a > self.view.span() * 3 / 4 || (b - a) * 200 < self.view.span() => {
                let pad = ((b - a) / 4).max(50);
                self.view = View::new(a - pad, b + pad);
            }
            _ => self.view = self.view.reveal(t),
        }
        self.set_view(self.view);
        if range.is_some_and(|(a, b)| b - a > 0) && self.cursor_col() >= self.columns() as i64 {
            self.cursor_t = self.col_time(self.columns() as i64 - 1);
        }
    }

    /// The lod rank under the cursor, if the cursor row is a rank.
    pub fn cursor_rank(&self) -> Option<usize> {
        match self.rows().get(self.cursor_row) {
            Some(Row::Rank(i) | Row::Thread(i, _)) => Some(*i),
            _ => None,
        }
    }

    /// The call under the cursor: the one running at the cursor time, or
    /// the one that dominates the cursor's column.
    pub fn cursor_call(&self) -> Option<(usize, usize)> {
        let i = self.cursor_rank()?;
        let lod = self.lod.as_ref()?;
        let mut data = &lod.ranks[i].data;
        // On a thread's lane: that thread's call, as the rank's call.
        let lane = match self.rows().get(self.cursor_row) {
            Some(Row::Thread(_, lane)) => Some(*lane),
            _ => None,
        };
        let threads = self.an.as_deref().map(|an| &an.threads);
        let as_rank = |c: usize| match (lane, threads) {
            (Some(lane), Some(th)) => th.rank_call(lane, c, &lod.ranks[i].data, lod).map(|c| (i, c)),
            _ => Some((i, c)),
        };
        if let (Some(lane), Some(th)) = (lane, threads) {
            data = th.data(lane);
        }
        if let Some(c) = data.call_at(self.cursor_t) {
            return as_rank(c);
        }
        let n = self.columns();
        let c = self.cursor_col();
        if c < 0 || c >= n as i64 {
            return None;
        }
        let (a, b) = (self.view.col_start(c as usize, n), self.view.col_start(c as usize + 1, n));
        let mut cells = Vec::new();
        data.cells(a, b.max(a + 1), 1, &mut cells);
        cells.first().and_then(|x| x.event).and_then(as_rank)
    }

    /// Handles a key.
    pub fn on_key(&mut self, k: KeyEvent) {
        if self.prompt.is_some() {
            self.prompt_key(k);
            return;
        }
        if self.help {
            match keys::action(&k) {
                Some(Action::Up) => self.help_scroll = self.help_scroll.saturating_sub(1),
                Some(Action::Down) => self.help_scroll += 1,
                Some(Action::PageUp) => self.help_scroll = self.help_scroll.saturating_sub(10),
                Some(Action::PageDown) => self.help_scroll += 10,
                Some(Action::Quit) => self.quit = true,
                _ => self.help = false,
            }
            return;
        }
        if let Some(a) = keys::action(&k) {
            self.act(a);
        }
    }

    fn prompt_key(&mut self, k: KeyEvent) {
        let Some(p) = self.prompt.as_mut() else { return };
        match k.code {
            KeyCode::Esc => self.prompt = None,
            KeyCode::Enter => {
                let text = self.prompt.take().unwrap_or_default();
                match Filter::parse(&text) {
                    Ok(f) => {
                        let empty = f.is_empty();
                        self.filter = f;
                        self.set_row(self.cursor_row);
                        if empty {
                            self.message = Some("filter cleared".into());
                        } else {
                            self.search(true);
                        }
                    }
                    Err(e) => self.message = Some(format!("search: {e}")),
                }
            }
            KeyCode::Backspace => {
                p.pop();
            }
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => self.prompt = None,
            KeyCode::Char(c) => p.push(c),
            _ => {}
        }
    }

    /// Carries out an action.
    pub fn act(&mut self, a: Action) {
        let n_rows = self.rows().len();
        match a {
            Action::Quit => self.quit = true,
            Action::Suspend => self.suspend = true,
            Action::Help => {
                self.help = true;
                self.help_scroll = 0;
            }
            Action::Left => self.move_cursor_cols(-1),
            Action::Right => self.move_cursor_cols(1),
            Action::PanLeft => self.pan(-0.25),
            Action::PanRight => self.pan(0.25),
            Action::Up => self.set_row(self.cursor_row.saturating_sub(1)),
            Action::Down => self.set_row((self.cursor_row + 1).min(n_rows.saturating_sub(1))),
            Action::PageUp => {
                let p = self.page();
                self.scroll = self.scroll.saturating_sub(p);
                self.set_row(self.cursor_row.saturating_sub(p));
            }
            Action::PageDown => {
                let p = self.page();
                self.scroll += p;
                self.set_row(self.cursor_row + p);
            }
            Action::Home => {
                let (lo, _) = self.span();
                self.set_view(View::new(lo, lo + self.view.span()).pan(-0.01));
                self.cursor_t = lo;
            }
            Action::End => {
                let (_, hi) = self.span();
                self.set_view(View::new(hi - self.view.span(), hi).pan(0.01));
                self.cursor_t = hi - 1;
            }
            Action::ZoomIn => self.zoom(0.5, self.cursor_t),
            Action::ZoomOut => self.zoom(2.0, self.cursor_t),
            Action::Fit => {
                let (lo, hi) = self.span();
                self.view = View::new(lo - (hi - lo) / 100, hi + (hi - lo) / 100);
                self.cursor_t = self.cursor_t.clamp(lo, hi);
            }
            Action::Mark => {
                self.mark = Some(self.cursor_t);
                self.message =
                    Some(format!("mark at {}; move the cursor and press z to zoom", self.fmt_abs(self.cursor_t)));
            }
            Action::ZoomSelection => match self.mark.take() {
                Some(m) if m != self.cursor_t => self.zoom_to(m, self.cursor_t),
                _ => self.message = Some("no selection: press m at one end, move the cursor, then z".into()),
            },
            Action::NextCall | Action::PrevCall => self.step_call(a == Action::NextCall),
            Action::Fold => self.fold(),
            Action::FoldAll => {
                let fold = self.groups.iter().any(|g| !g.folded);
                self.groups.iter_mut().for_each(|g| g.folded = fold);
                self.set_row(self.cursor_row);
            }
            Action::Search => self.prompt = Some(self.filter.text.clone()),
            Action::NextMatch | Action::PrevMatch => self.search(a == Action::NextMatch),
            Action::NextSlowColl | Action::PrevSlowColl => self.jump_slow_coll(a == Action::NextSlowColl),
            Action::NextLateSender | Action::PrevLateSender => self.jump_late_sender(a == Action::NextLateSender),
            Action::NextWorstWait | Action::PrevWorstWait => self.jump_worst_wait(a == Action::NextWorstWait),
            Action::WaitKind => {
                self.wait_kind = (self.wait_kind + 1) % PatternKind::ALL.len();
                self.wait_pos = None;
                let k = PatternKind::ALL[self.wait_kind];
                let n = self.an.as_deref().map(|an| an.worst.of(k).len());
                self.message = Some(match n {
                    Some(n) => format!("v jumps through the worst {}: {n} of them", k.title()),
                    None => format!("v jumps through the worst {} (the analyses are still loading)", k.title()),
                });
            }
            Action::CriticalPath => {
                self.show_critical = !self.show_critical;
                self.message = Some(match (&self.an, self.show_critical) {
                    (_, false) => "critical path hidden".into(),
                    (Some(an), true) => format!(
                        "critical path ({} long) in red under the calls and gaps on it",
                        fmt_dur(an.critical.length_ns)
                    ),
                    (None, true) => "the critical path comes with the analyses, which are still loading".into(),
                });
            }
            Action::Partner => self.goto_partner(),
            Action::NextPanel => self.show_panel((self.panel + 1) % PANELS.len()),
            Action::PrevPanel => self.show_panel((self.panel + PANELS.len() - 1) % PANELS.len()),
            Action::Panel(p) => self.show_panel(p as usize),
            Action::TogglePanel => self.panel_visible = !self.panel_visible,
            Action::Regions => {
                if self.an.as_ref().is_some_and(|a| a.has_regions) {
                    self.show_regions = !self.show_regions;
                    self.set_row(self.cursor_row);
                } else {
                    self.message = Some(match &self.an {
                        Some(_) => "no user regions in this trace (mpitrace_region_begin/end)".into(),
                        None => "the regions come with the analyses, which are still loading".into(),
                    });
                }
            }
            Action::Sort => {
                self.sort = self.sort.next();
                self.sort_desc = self.sort != SortKey::Name;
                self.show_panel(1);
            }
            Action::SortReverse => {
                self.sort_desc = !self.sort_desc;
                self.show_panel(1);
            }
            Action::PanelDown => self.panel_scroll += 1,
            Action::PanelUp => self.panel_scroll = self.panel_scroll.saturating_sub(1),
            Action::Clear => {
                self.mark = None;
                self.message = None;
                if !self.filter.is_empty() {
                    self.filter = Filter::default();
                    self.set_row(self.cursor_row);
                }
            }
        }
    }

    fn show_panel(&mut self, p: usize) {
        if self.panel != p {
            self.panel_scroll = 0;
        }
        self.panel = p;
        self.panel_visible = true;
    }

    fn pan(&mut self, frac: f64) {
        let before = self.view;
        self.set_view(self.view.pan(frac));
        self.cursor_t += self.view.t0 - before.t0;
    }

    fn zoom(&mut self, factor: f64, at: i64) {
        self.set_view(self.view.zoom(factor, at));
    }

    fn zoom_to(&mut self, a: i64, b: i64) {
        let (a, b) = (a.min(b), a.max(b));
        self.set_view(View::new(a, b));
        self.cursor_t = self.cursor_t.clamp(self.view.t0, self.view.t1 - 1);
        self.message = Some(format!("zoomed to {} – {}", self.fmt_abs(a), self.fmt_abs(b)));
    }

    /// Formats a trace time relative to the start of the trace, with the
    /// precision of a column.
    pub fn fmt_abs(&self, t: i64) -> String {
        let step = crate::view::tick_step(self.view.span() as f64 / self.columns() as f64);
        fmt_time(t - self.span().0, step)
    }

    fn fold(&mut self) {
        let rows = self.rows();
        // A rank with thread lanes: fold them into one row, or unfold.
        let threaded = match rows.get(self.cursor_row) {
            Some(Row::Thread(i, _)) => Some(*i),
            Some(Row::Rank(i)) if !self.thread_lanes(*i).is_empty() => Some(*i),
            _ => None,
        };
        if let Some(i) = threaded {
            if !self.threads_folded.remove(&i) {
                self.threads_folded.insert(i);
            }
            let r = self.rows().iter().position(|r| matches!(*r, Row::Rank(x) | Row::Thread(x, _) if x == i));
            self.set_row(r.unwrap_or(0));
            return;
        }
        let g = match rows.get(self.cursor_row) {
            Some(Row::Group(g)) => Some(*g),
            Some(Row::Rank(i) | Row::Thread(i, _)) => self.groups.iter().position(|g| g.members.contains(i)),
            None => None,
        };
        let Some(g) = g else {
            self.message = Some("no groups: ranks are grouped by host, or in blocks when there are many".into());
            return;
        };
        self.groups[g].folded = !self.groups[g].folded;
        let first = self.groups[g].members[0];
        let r = self.rows().iter().position(|x| match *x {
            Row::Group(y) => self.groups[g].folded && y == g,
            Row::Rank(i) | Row::Thread(i, _) => !self.groups[g].folded && i == first,
        });
        let r = r.unwrap_or(0);
        self.set_row(r);
    }

    fn step_call(&mut self, forward: bool) {
        let Some(i) = self.cursor_rank() else { return };
        let Some(lod) = &self.lod else { return };
        let d = &lod.ranks[i].data;
        let next = if forward {
            let j = d.first_at(self.cursor_t + 1);
            (j < d.len()).then_some(j)
        } else {
            d.first_at(self.cursor_t).checked_sub(1)
        };
        match next {
            Some(j) => self.goto_call(i, j),
            None => self.message = Some(format!("no {} call on this rank", if forward { "next" } else { "previous" })),
        }
    }

    /// Finds the next (or previous) call matching the filter after (or
    /// before) the cursor, over all ranks in time order. Blocks of calls
    /// without a matching name (or long enough call) are skipped through
    /// the [`SearchIndex`], built on the first search; a rank's scan stops
    /// at the best hit found on the ranks before it.
    pub fn search(&mut self, forward: bool) {
        let Some(lod) = &self.lod else { return };
        if self.filter.is_empty() {
            self.message = Some("no search: press / and type what to look for".into());
            return;
        }
        if self.filter.needs_model() && self.an.is_none() {
            self.message = Some("comm= and tag= need the analyses, which are still loading".into());
            return;
        }
        if !self.filter.regions.is_empty() {
            self.search_regions(forward);
            return;
        }
        if self.search_index.is_none() {
            self.search_index = Some(SearchIndex::build(lod));
        }
        let Some(index) = &self.search_index else { return };
        let mask = index.mask(lod, &self.filter);
        let min_dur = self.filter.min_dur;
        let ok: Vec<bool> = lod.names.iter().map(|n| self.filter.name_matches(n)).collect();
        let here = (self.cursor_t, self.cursor_rank().map(|i| lod.ranks[i].rank).unwrap_or(-1));
        let mut best: Option<((i64, i32), usize, usize)> = None;
        for (i, r) in lod.ranks.iter().enumerate() {
            if !self.filter.rank_matches(r.rank) {
                continue;
            }
            let d = &r.data;
            let good = |j: usize| {
                let c = d.call(j);
                ok.get(c.name as usize).copied().unwrap_or(false)
                    && min_dur.is_none_or(|m| c.duration() >= m)
                    && self.model_matches(r.rank, &c, lod)
            };
            // Past the best hit so far: nothing better on this rank.
            let past = |j: usize| {
                best.is_some_and(|(b, _, _)| if forward { d.call(j).t_start > b.0 } else { d.call(j).t_start < b.0 })
            };
            let mut hit = None;
            if forward {
                let mut j = d.first_at(here.0 + i64::from(r.rank <= here.1));
                while j < d.len() && !past(j) {
                    let end = ((j / BLOCK + 1) * BLOCK).min(d.len());
                    if index.may_match(i, j / BLOCK, &mask, min_dur) {
                        hit = (j..end).find(|&k| good(k));
                        if hit.is_some() {
                            break;
                        }
                    }
                    j = end;
                }
            } else {
                let mut end = d.first_at(here.0 + i64::from(r.rank < here.1));
                while end > 0 && !past(end - 1) {
                    let start = (end - 1) / BLOCK * BLOCK;
                    if index.may_match(i, start / BLOCK, &mask, min_dur) {
                        hit = (start..end).rev().find(|&k| good(k));
                        if hit.is_some() {
                            break;
                        }
                    }
                    end = start;
                }
            }
            if let Some(j) = hit {
                let key = (d.call(j).t_start, r.rank);
                if best.is_none_or(|(b, _, _)| if forward { key < b } else { key > b }) {
                    best = Some((key, i, j));
                }
            }
        }
        match best {
            Some((_, i, j)) => {
                self.goto_call(i, j);
                let c = self.lod.as_ref().map(|l| (l.ranks[i].rank, l.ranks[i].data.call(j)));
                if let Some((rank, c)) = c {
                    let name = self.lod.as_ref().map(|l| l.name(c.name).to_string()).unwrap_or_default();
                    self.message = Some(format!(
                        "{name} on rank {rank} at {}, {}",
                        self.fmt_abs(c.t_start),
                        fmt_dur(c.duration())
                    ));
                }
            }
            None => {
                self.message =
                    Some(format!("no {} match for `{}`", if forward { "later" } else { "earlier" }, self.filter.text))
            }
        }
    }

    /// Finds the next (or previous) user region matching the filter that
    /// starts after (or before) the cursor, over all ranks in time order.
    fn search_regions(&mut self, forward: bool) {
        if !self.need_analyses() {
            return;
        }
        let (Some(an), Some(lod)) = (self.an.as_deref(), self.lod.as_ref()) else { return };
        let f = &self.filter;
        let here = (self.cursor_t, self.cursor_rank().map(|i| lod.ranks[i].rank).unwrap_or(-1));
        let mut best: Option<((i64, i32), usize, Region)> = None;
        for (i, r) in lod.ranks.iter().enumerate() {
            let Some(regs) = an.regions_of(r.rank).filter(|_| f.rank_matches(r.rank)) else { continue };
            for list in &regs.depths {
                let good = |x: &&Region| {
                    f.region_matches(an.an.model.name(x.name)) && f.min_dur.is_none_or(|m| x.t1 - x.t0 >= m)
                };
                let hit = if forward {
                    let from = list.partition_point(|x| x.t0 < here.0 + i64::from(r.rank <= here.1));
                    list[from..].iter().find(good)
                } else {
                    let to = list.partition_point(|x| x.t0 < here.0 + i64::from(r.rank < here.1));
                    list[..to].iter().rev().find(good)
                };
                if let Some(x) = hit {
                    let key = (x.t0, r.rank);
                    if best.as_ref().is_none_or(|(b, _, _)| if forward { key < *b } else { key > *b }) {
                        best = Some((key, i, *x));
                    }
                }
            }
        }
        match best {
            Some(((t0, rank), i, x)) => {
                let msg = format!(
                    "region {} on rank {rank} at {}, {}",
                    an.an.model.name(x.name),
                    self.fmt_abs(t0),
                    fmt_dur(x.t1 - x.t0)
                );
                self.goto(i, t0, Some((x.t0, x.t1)));
                self.message = Some(msg);
            }
            None => {
                self.message =
                    Some(format!("no {} region for `{}`", if forward { "later" } else { "earlier" }, self.filter.text))
            }
        }
    }

    /// The communicator and tag parts of the filter, through the analyses.
    fn model_matches(&self, rank: i32, c: &Call, lod: &Lod) -> bool {
        if !self.filter.needs_model() {
            return true;
        }
        let Some(an) = &self.an else { return false };
        let Some(idx) = an.model_call(rank, c.t_start, lod.name(c.name)) else { return false };
        let m = &an.an.model;
        let r = &m.ranks[rank as usize];
        let comm_ok =
            |comm: u32| m.comms.get(comm as usize).is_some_and(|d| self.filter.comm_matches(d.id, &d.label()));
        let p2p = [&r.sends, &r.recvs].into_iter().any(|ends| {
            Analysed::p2p_of(ends, idx).into_iter().any(|k| {
                let p = ends.at(k);
                comm_ok(p.comm) && self.filter.tag.is_none_or(|t| t == p.tag)
            })
        });
        p2p || (self.filter.tag.is_none() && an.colls_of(rank, idx).into_iter().any(|k| comm_ok(r.colls[k].comm)))
    }

    fn lod_index(&self, rank: i32) -> Option<usize> {
        self.lod.as_ref()?.ranks.binary_search_by_key(&rank, |r| r.rank).ok()
    }

    fn need_analyses(&mut self) -> bool {
        if self.an.is_some() {
            return true;
        }
        self.message = Some(match &self.an_error {
            Some(e) => format!("analyses failed: {e}"),
            None => "the analyses are still loading".into(),
        });
        false
    }

    fn jump_slow_coll(&mut self, forward: bool) {
        if !self.need_analyses() {
            return;
        }
        let Some(an) = self.an.as_deref() else { return };
        let colls = &an.an.collectives;
        let first = |i: u32| {
            let inst = &colls.instances[i as usize];
            let mb = &colls.members[inst.first as usize..(inst.first + inst.n) as usize];
            let t0 = mb.iter().map(|x| an.raw(x.rank as i32, x.arrival)).min().unwrap_or(0);
            let t1 = mb.iter().map(|x| an.raw(x.rank as i32, x.end)).max().unwrap_or(0);
            (t0, t1)
        };
        // Where a jump puts the cursor: the arrival of the last rank.
        let at = |i: u32| {
            let inst = &colls.instances[i as usize];
            an.raw(inst.last_rank, inst.last_arrival)
        };
        let pick = if forward {
            an.slow_colls.iter().copied().find(|&i| at(i) > self.cursor_t)
        } else {
            an.slow_colls.iter().rev().copied().find(|&i| at(i) < self.cursor_t)
        };
        let Some(i) = pick else {
            self.message = Some(format!(
                "no {} slow collective (arrival spread of at least {})",
                if forward { "later" } else { "earlier" },
                fmt_dur(an.slow_threshold)
            ));
            return;
        };
        let inst = colls.instances[i as usize];
        let (t0, t1) = first(i);
        let name = an.an.model.name(inst.name);
        let msg = format!(
            "{} #{} on {}: arrivals spread over {}, rank {} last ({} slow of {})",
            name.strip_prefix("MPI_").unwrap_or(name),
            inst.seq,
            an.an.model.comm_label(inst.comm),
            fmt_dur(inst.spread()),
            inst.last_rank,
            an.slow_colls.len(),
            colls.instances.len()
        );
        let t_last = at(i);
        if let Some(li) = self.lod_index(inst.last_rank) {
            self.goto(li, t_last, Some((t0, t1)));
        }
        self.message = Some(msg);
    }

    fn jump_late_sender(&mut self, forward: bool) {
        if !self.need_analyses() {
            return;
        }
        let Some(an) = self.an.as_deref() else { return };
        let here =
            (self.cursor_t, self.cursor_rank().and_then(|i| self.lod.as_ref().map(|l| l.ranks[i].rank)).unwrap_or(-1));
        let ls = &an.late_senders;
        let pick = if forward {
            ls.iter().find(|l| (l.t, l.rank) > here)
        } else {
            ls.iter().rev().find(|l| (l.t, l.rank) < here)
        };
        let Some(l) = pick.copied() else {
            self.message =
                Some(format!("no {} late sender ({} in all)", if forward { "later" } else { "earlier" }, ls.len()));
            return;
        };
        let name = {
            let r = &an.an.model.ranks[l.rank as usize];
            an.an.model.name(r.calls.at(l.call as usize).name).to_string()
        };
        let msg = format!(
            "late sender: rank {} waited {} in {name} for rank {} ({} late senders)",
            l.rank,
            fmt_dur(l.wait),
            l.sender,
            ls.len()
        );
        if let Some(li) = self.lod_index(l.rank) {
            self.goto(li, l.t, Some((l.t.min(l.t_send), l.t.max(l.t_send) + l.wait / 10)));
        }
        self.message = Some(msg);
    }

    /// Jumps to the next worst (`forward`) or back to the previous, worse,
    /// instance of the chosen wait state (`wait_kind`), worst first.
    fn jump_worst_wait(&mut self, forward: bool) {
        if !self.need_analyses() {
            return;
        }
        let Some(an) = self.an.as_deref() else { return };
        let kind = PatternKind::ALL[self.wait_kind];
        let list = an.worst.of(kind);
        let pos = match (self.wait_pos, forward) {
            (None, _) => 0,
            (Some(p), true) => p + 1,
            (Some(p), false) => p.saturating_sub(1),
        };
        let Some(w) = list.get(pos).copied() else {
            self.message = Some(if list.is_empty() {
                format!("no {} in this trace (t chooses another wait state)", kind.title())
            } else {
                format!("no more {}: all {} shown, worst first (V goes back)", kind.title(), list.len())
            });
            return;
        };
        self.wait_pos = Some(pos);
        let name = {
            let r = &an.an.model.ranks[w.rank as usize];
            an.an.model.name(r.calls.at(w.call as usize).name).to_string()
        };
        let msg = format!(
            "{} #{} of {}: rank {} lost {} in {name} waiting for rank {}",
            kind.title(),
            pos + 1,
            list.len(),
            w.rank,
            fmt_dur(w.wait),
            w.cause
        );
        if let Some(li) = self.lod_index(w.rank) {
            self.goto(li, w.t_start, Some((w.t_start, w.t_end)));
        }
        self.message = Some(msg);
    }

    /// Jumps to the other end of a message of the call under the cursor.
    fn goto_partner(&mut self) {
        if !self.need_analyses() {
            return;
        }
        let Some(target) = self.partner() else {
            self.message = Some("the call under the cursor has no matched message".into());
            return;
        };
        let (rank, t) = target;
        if let Some(li) = self.lod_index(rank) {
            let call = self.lod.as_ref().and_then(|l| l.ranks[li].data.call_at(t));
            match call {
                Some(c) => self.goto_call(li, c),
                None => self.goto(li, t, None),
            }
            self.message = Some(format!("partner on rank {rank} at {}", self.fmt_abs(t)));
        }
    }

    /// The other end (rank, trace time of its call) of the first matched
    /// message of the call under the cursor.
    pub fn partner(&self) -> Option<(i32, i64)> {
        let an = self.an.as_deref()?;
        let lod = self.lod.as_ref()?;
        let (i, j) = self.cursor_call()?;
        let rank = lod.ranks[i].rank;
        let c = lod.ranks[i].data.call(j);
        let idx = an.model_call(rank, c.t_start, lod.name(c.name))?;
        let m = &an.an.model;
        let r = &m.ranks.get(rank as usize)?;
        for k in Analysed::p2p_of(&r.sends, idx) {
            let q = an.an.matching.send_to_recv.get(rank as usize)?.get(k)?;
            if q.is_some() {
                let pr = &m.ranks[q.rank as usize];
                let p = &pr.recvs.at(q.idx as usize);
                let call = if p.done != analyzers::model::NONE { p.done } else { p.post };
                return Some((q.rank as i32, an.raw(q.rank as i32, pr.calls.at(call as usize).t_start)));
            }
        }
        for k in Analysed::p2p_of(&r.recvs, idx) {
            let q = an.an.matching.recv_to_send.get(rank as usize)?.get(k)?;
            if q.is_some() {
                let pr = &m.ranks[q.rank as usize];
                let p = &pr.sends.at(q.idx as usize);
                return Some((q.rank as i32, an.raw(q.rank as i32, pr.calls.at(p.post as usize).t_start)));
            }
        }
        None
    }

    /// Handles a mouse event.
    pub fn on_mouse(&mut self, m: MouseEvent) {
        if self.help {
            if matches!(m.kind, MouseEventKind::Down(_)) {
                self.help = false;
            }
            return;
        }
        let g = self.geo();
        let inside = |r: Rect| m.column >= r.x && m.column < r.x + r.width && m.row >= r.y && m.row < r.y + r.height;
        let in_tl = inside(g.timeline) || inside(g.labels) || inside(g.axis);
        let shift = m.modifiers.contains(KeyModifiers::SHIFT);
        let col = m.column as i64 - g.timeline.x as i64;
        let t = self.col_time(col);
        match m.kind {
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let up = m.kind == MouseEventKind::ScrollUp;
                if g.panel.is_some_and(inside) {
                    self.act(if up { Action::PanelUp } else { Action::PanelDown });
                } else if in_tl && shift {
                    self.act(if up { Action::Up } else { Action::Down });
                } else if in_tl {
                    self.zoom(if up { 0.8 } else { 1.25 }, t);
                }
            }
            MouseEventKind::Down(b) if inside(g.timeline) || inside(g.labels) => {
                let row = self.scroll + (m.row - g.timeline.y) as usize / self.row_lines();
                if row < self.rows().len() {
                    self.set_row(row);
                }
                if inside(g.timeline) {
                    self.cursor_t = t;
                }
                self.drag = Some(if b == MouseButton::Right || shift {
                    self.mark = Some(t);
                    Drag::Select { t }
                } else {
                    Drag::Pan { x: m.column, view: self.view }
                });
            }
            MouseEventKind::Drag(_) => match self.drag {
                Some(Drag::Pan { x, view }) => {
                    let w = view.span() as f64 / self.columns() as f64;
                    let dt = ((x as f64 - m.column as f64) * w).round() as i64;
                    self.set_view(View::new(view.t0 + dt, view.t1 + dt));
                }
                Some(Drag::Select { .. }) => self.cursor_t = t,
                None => {}
            },
            MouseEventKind::Up(_) => {
                if let Some(Drag::Select { t: a }) = self.drag {
                    let w = self.view.span() / self.columns() as i64;
                    if (t - a).abs() > w {
                        self.mark = None;
                        self.cursor_t = t;
                        self.zoom_to(a, t);
                    }
                }
                self.drag = None;
            }
            _ => {}
        }
    }
}

/// Groups of ranks: by host when there are several hosts with several
/// ranks each, else in blocks of 16 when there are more than 32 ranks.
/// Most ranks in one group of a host.
pub const MAX_GROUP: usize = 32;

fn make_groups(lod: &Lod) -> Vec<Group> {
    let n = lod.ranks.len();
    let mut hosts: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, r) in lod.ranks.iter().enumerate() {
        let h = r.host.clone().unwrap_or_default();
        match hosts.last_mut() {
            Some((name, v)) if *name == h => v.push(i),
            _ => hosts.push((h, vec![i])),
        }
    }
    let by_host = hosts.len() > 1 && hosts.len() < n && hosts.iter().all(|(h, _)| !h.is_empty());
    let fold = n > 256;
    if by_host {
        // A folded row costs one query per member and frame: hosts with
        // more ranks than MAX_GROUP fold into several rows.
        let mut out = Vec::new();
        for (host, members) in hosts {
            if members.len() <= MAX_GROUP {
                out.push(Group { name: host, members, folded: fold });
                continue;
            }
            for part in members.chunks(MAX_GROUP) {
                let (lo, hi) = (lod.ranks[part[0]].rank, lod.ranks[part[part.len() - 1]].rank);
                out.push(Group { name: format!("{host}:{lo}-{hi}"), members: part.to_vec(), folded: fold });
            }
        }
        return out;
    }
    if n <= 32 {
        return Vec::new();
    }
    (0..n)
        .step_by(16)
        .map(|a| {
            let members: Vec<usize> = (a..(a + 16).min(n)).collect();
            let (lo, hi) = (lod.ranks[a].rank, lod.ranks[members[members.len() - 1]].rank);
            Group { name: format!("{lo}-{hi}"), members, folded: fold }
        })
        .collect()
}
