//! The timeline's geometry for one frame, built from the level-of-detail
//! core as a few batched meshes (a pure function of the trace and the
//! view, so it is tested and benchmarked without a window).
//!
//! Per visible lane, [`trace_lod::RankLod::cells`] answers what each pixel
//! column shows; runs of equal columns become one rectangle, coloured by
//! the kind of the dominant call and shaded by the time in MPI. Names are
//! written on runs wide enough for them. Message arrows and collective
//! instances come from the analyses when few enough are in view.

use egui::epaint::{Color32, Mesh, Pos2, Rect, Vec2};
use trace_lod::{Cell, Lod};

use crate::data::Trace;
use crate::filter::CallSet;
use crate::lanes::{Lanes, Row};
use crate::view::TimeView;
use trace_view::Edge;

/// Most message arrows drawn in one frame; more are counted, not drawn.
pub const MAX_ARROWS: usize = 20_000;
/// Most messages looked at in one frame (to find those between visible
/// lanes); with more in the range, they are counted, not walked.
pub const MAX_WALK: usize = 100_000;
/// Most collective instances joined in one frame.
pub const MAX_COLLS: usize = 2_000;
/// Width of a character of the timeline's labels, px (for fitting).
pub const CHAR_W: f32 = 7.0;

/// What the frame is drawn for.
pub struct Scene<'a> {
    pub trace: &'a Trace,
    pub lanes: &'a Lanes,
    pub view: TimeView,
    /// The area of the lanes on screen (below the ruler, right of the names).
    pub rect: Rect,
    /// Vertical scroll of the lanes, px.
    pub scroll: f32,
    /// Per call name id: kept by the filter.
    pub kept: &'a [bool],
    pub min_dur: i64,
    /// The calls, messages and collectives kept by `comm=`/`tag=`, if the
    /// filter has them (others are dimmed or not drawn).
    pub only: Option<&'a CallSet>,
    /// The (sender, receiver) pair whose messages stand out.
    pub highlight: Option<(i32, i32)>,
    /// The message that stands out (picked).
    pub picked_msg: Option<u64>,
    pub dark: bool,
    /// Whether the critical path is drawn.
    pub critical: bool,
}

/// A label to write.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub pos: Pos2,
    pub text: String,
}

/// The geometry of one frame.
#[derive(Default)]
pub struct Geometry {
    pub bars: Mesh,
    pub lines: Mesh,
    pub labels: Vec<Label>,
    /// Arrows drawn, for hovering: (from, to, message id).
    pub arrows: Vec<(Pos2, Pos2, u64)>,
    /// Messages in view that were not drawn (too many).
    pub arrows_skipped: usize,
    pub colls_drawn: usize,
    pub colls_skipped: usize,
    /// Rectangles of the bars (for tests and statistics).
    pub rects: usize,
    /// The critical path as drawn: (world rank, left and right x) of each
    /// run of pixels where it runs on that rank's lane.
    pub critical: Vec<(i32, f32, f32)>,
}

/// Colour of the critical path.
pub const CRITICAL: Color32 = Color32::from_rgb(220, 30, 30);
/// Height of the critical path's band at the bottom of a lane, px.
pub const CRITICAL_H: f32 = 3.0;

/// Colour of a call name by its kind (the viewers' palette).
pub fn kind_colour(name: &str) -> Color32 {
    let [r, g, b] = trace_view::palette::swatch_of(name).rgb;
    Color32::from_rgb(r, g, b)
}

/// Colours of all call names of `lod`.
pub fn palette(lod: &Lod) -> Vec<Color32> {
    palette_of(&lod.names)
}

/// Colours of call names `names`.
pub fn palette_of(names: &[String]) -> Vec<Color32> {
    names.iter().map(|n| kind_colour(n)).collect()
}

/// What a run of columns shows (equal keys are merged).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    name: u16,
    event: Option<usize>,
    shade: u8,
    dim: bool,
}

fn key_of(
    c: &Cell,
    shade_per_ns: f64,
    scene: &Scene,
    kept: &[bool],
    lod_rank: &trace_lod::RankLod,
    kept_col: bool,
) -> Option<Key> {
    let name = c.dominant?;
    if c.busy <= 0 && c.count == 0 {
        return None;
    }
    // Quarters of the column in MPI, rounded up (1 to 4); a call covering
    // the column is full.
    let shade = if c.event.is_some() && c.busy > 0 {
        4
    } else {
        let q = (c.busy.max(0) as f64 * shade_per_ns).min(4.0);
        let whole = q as u8;
        (whole + u8::from((whole as f64) < q)).clamp(1, 4)
    };
    let mut dim = !kept_col || !kept.get(name as usize).copied().unwrap_or(true);
    if scene.min_dur > 0 {
        if let Some(i) = c.event {
            dim |= lod_rank.call(i).duration() < scene.min_dur;
        }
    }
    Some(Key { name, event: c.event, shade, dim })
}

fn shaded(base: Color32, shade: u8, dim: bool, dark: bool) -> Color32 {
    let bg = if dark { Color32::from_gray(30) } else { Color32::from_gray(245) };
    if dim {
        return if dark { Color32::from_gray(60) } else { Color32::from_gray(215) };
    }
    let t = shade as f32 / 4.0;
    let mix = |a: u8, b: u8| (a as f32 + (b as f32 - a as f32) * t).round() as u8;
    Color32::from_rgb(mix(bg.r(), base.r()), mix(bg.g(), base.g()), mix(bg.b(), base.b()))
}

/// The colours of the bars per call name id and shade (0 to 4), computed
/// once per frame; index 5 is the dimmed colour.
fn shade_table(palette: &[Color32], dark: bool) -> Vec<[Color32; 6]> {
    palette
        .iter()
        .map(|&c| {
            std::array::from_fn(|k| if k == 5 { shaded(c, 0, true, dark) } else { shaded(c, k as u8, false, dark) })
        })
        .collect()
}

/// Adds a line of width `w` from `a` to `b` to `mesh`.
pub fn add_line(mesh: &mut Mesh, a: Pos2, b: Pos2, w: f32, c: Color32) {
    let d = b - a;
    let len = d.length();
    if len < 1e-3 {
        return;
    }
    let n = Vec2::new(-d.y, d.x) / len * (w / 2.0);
    let i = mesh.vertices.len() as u32;
    for p in [a + n, a - n, b - n, b + n] {
        mesh.colored_vertex(p, c);
    }
    mesh.add_triangle(i, i + 1, i + 2);
    mesh.add_triangle(i, i + 2, i + 3);
}

fn add_arrow(mesh: &mut Mesh, a: Pos2, b: Pos2, w: f32, c: Color32) {
    add_line(mesh, a, b, w, c);
    let d = b - a;
    let len = d.length();
    if len < 8.0 {
        return;
    }
    let u = d / len;
    let n = Vec2::new(-u.y, u.x);
    let i = mesh.vertices.len() as u32;
    for p in [b, b - u * 7.0 + n * 3.5, b - u * 7.0 - n * 3.5] {
        mesh.colored_vertex(p, c);
    }
    mesh.add_triangle(i, i + 1, i + 2);
}

/// Lanes from which the bars are built on several threads.
pub const PARALLEL_LANES: usize = 16;

/// Builds the frame's geometry. `cells` is scratch space reused between
/// frames. The lanes' bars are built on all cores when many are visible.
pub fn build(scene: &Scene, palette: &[Color32], cells: &mut Vec<Cell>) -> Geometry {
    let mut g = Geometry::default();
    let rows: Vec<usize> = scene.lanes.visible(scene.scroll, scene.rect.height()).collect();
    // Threads only where there are cores to spare (on two busy cores they cost more than they save).
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let threads = if cores >= 4 { cores.min(rows.len() / (PARALLEL_LANES / 2).max(1)) } else { 1 };
    if threads <= 1 || rows.len() < PARALLEL_LANES {
        bars(scene, palette, &rows, cells, &mut g);
    } else {
        let chunk = rows.len().div_ceil(threads);
        let parts: Vec<Geometry> = std::thread::scope(|s| {
            let hs: Vec<_> = rows
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || {
                        let mut g = Geometry::default();
                        bars(scene, palette, part, &mut Vec::new(), &mut g);
                        g
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
        });
        for p in parts {
            g.bars.append(p.bars);
            g.labels.extend(p.labels);
            g.rects += p.rects;
        }
    }
    if let Some(a) = &scene.trace.analysed {
        regions(scene, a, &mut g);
        if scene.critical {
            critical_path(scene, a, &mut g);
        }
        arrows(scene, a, &mut g);
        collectives(scene, a, palette, &mut g);
    }
    g
}

/// The critical path: a red band at the bottom of each lane where the path
/// runs on that rank (calls and the computation between them), and a red
/// line where it moves from one rank to another (both lanes in view).
fn critical_path(scene: &Scene, a: &crate::data::Analysed, g: &mut Geometry) {
    let (t0, t1) = scene.view.range();
    let r = scene.rect;
    let w = r.width().max(1.0);
    let px = w.round().max(1.0) as usize;
    let mut cols = Vec::new();
    for k in scene.lanes.visible(scene.scroll, r.height()) {
        let (Row::Rank(i) | Row::Thread { rank: i, .. }) = scene.lanes.rows[k] else { continue };
        let rank = scene.trace.lod.ranks[i].rank;
        a.critical.columns(rank, t0, t1, px, &mut cols);
        let y1 = r.top() + scene.lanes.tops[k + 1] - scene.scroll;
        let mut c = 0;
        while c < px {
            if !cols[c] {
                c += 1;
                continue;
            }
            let e = c + cols[c..].iter().take_while(|x| **x).count();
            let (xa, xb) = (c as f32 * w / px as f32, e as f32 * w / px as f32);
            g.lines.add_colored_rect(
                Rect::from_min_max(Pos2::new(r.left() + xa, y1 - CRITICAL_H - 1.0), Pos2::new(r.left() + xb, y1 - 1.0)),
                CRITICAL,
            );
            g.critical.push((rank, r.left() + xa, r.left() + xb));
            c = e;
        }
    }
}

/// Colour of a user region by its name.
pub fn region_colour(name: u16) -> Color32 {
    let h = (name as u32).wrapping_mul(2_654_435_761) >> 24;
    egui::ecolor::Hsva::new(h as f32 / 256.0, 0.55, 0.85, 1.0).into()
}

/// User regions: a band of 3 px per nesting level at the top of the
/// lane; at most about one region per pixel column (the ones starting
/// inside a region's last pixel are skipped).
fn regions(scene: &Scene, a: &crate::data::Analysed, g: &mut Geometry) {
    let (t0, t1) = scene.view.range();
    let r = scene.rect;
    let w = r.width().max(1.0);
    for k in scene.lanes.visible(scene.scroll, r.height()) {
        let (Row::Rank(i) | Row::Thread { rank: i, .. }) = scene.lanes.rows[k] else { continue };
        let Some(regs) = usize::try_from(scene.trace.lod.ranks[i].rank).ok().and_then(|x| a.regions.get(x)) else {
            continue;
        };
        if regs.is_empty() || scene.lanes.lane_h < 8.0 {
            continue;
        }
        let y0 = r.top() + scene.lanes.tops[k] - scene.scroll + 1.0;
        for depth in 0..REGION_DEPTHS {
            // The region of this depth running into the view, if any, else
            // the first one starting in it.
            let start = regs.partition_point(|q| q.t0 < t0);
            let mut j = (start.saturating_sub(64)..start)
                .rev()
                .find(|&q| regs[q].depth == depth && regs[q].t1 >= t0)
                .unwrap_or(start);
            let mut from = i64::MIN;
            while j < regs.len() {
                let x = &regs[j];
                if x.depth != depth || x.t1 < t0.max(from) {
                    j += 1;
                    continue;
                }
                if x.t0 >= t1 {
                    break;
                }
                let (xa, xb) = (scene.view.x_of(x.t0 as f64, w).max(0.0), scene.view.x_of(x.t1 as f64, w).min(w));
                let ya = y0 + REGION_BAND.1 * depth as f32;
                g.bars.add_colored_rect(
                    Rect::from_min_max(
                        Pos2::new(r.left() + xa, ya),
                        Pos2::new(r.left() + xb.max(xa + 1.0), ya + REGION_BAND.0),
                    ),
                    region_colour(x.name),
                );
                // Skip to the first region starting after this one's last pixel.
                from = scene.view.t_of(xb.max(xa + 1.0), w).ceil() as i64;
                j = j.max(regs.partition_point(|q| q.t0 < from)).max(j + 1);
            }
        }
    }
}

/// The bars and labels of rows `rows` (indexes into the lanes' rows).
fn bars(scene: &Scene, palette: &[Color32], rows: &[usize], cells: &mut Vec<Cell>, g: &mut Geometry) {
    let r = scene.rect;
    let w = r.width().max(1.0);
    let px = w.round().max(1.0) as usize;
    let (t0, t1) = scene.view.range();
    let lod = &scene.trace.lod;
    let shades = shade_table(palette, scene.dark);
    let (mut bounds, mut kept_cols) = (Vec::new(), Vec::new());
    let grey = shade_table(&[Color32::GRAY], scene.dark)[0];
    // Thread lanes name their calls as the analyses' model does: their
    // colours and what the filter keeps, by those names.
    let threads = scene.trace.analysed.as_ref().map(|a| &a.threads).filter(|t| t.any());
    let (t_shades, t_kept) = match threads {
        Some(th) => (
            shade_table(&palette_of(&th.lod.names), scene.dark),
            th.lod
                .names
                .iter()
                .map(|n| lod.name_id(n).and_then(|id| scene.kept.get(id as usize).copied()).unwrap_or(true))
                .collect(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    for &k in rows {
        let (i, rank, names, shades, kept) = match (&scene.lanes.rows[k], threads) {
            (Row::Rank(i), _) => (*i, &lod.ranks[*i].data, &**lod, &shades, scene.kept),
            (Row::Thread { rank, lane, .. }, Some(th)) => (*rank, th.data(*lane), &th.lod, &t_shades, &t_kept[..]),
            _ => continue,
        };
        let n = px;
        let shade_per_ns = 4.0 * n as f64 / (t1 - t0) as f64;
        let y0 = r.top() + scene.lanes.tops[k] - scene.scroll;
        let y1 = y0 + scene.lanes.lane_h;
        let (ya, yb) = (y0 + 1.0, (y1 - 1.0).max(y0 + 1.0));
        rank.cells(t0, t1, n, cells);
        // Columns where a call kept by comm=/tag= runs.
        if let Some(set) = scene.only {
            trace_lod::column_bounds(t0, t1, n, &mut bounds);
            set.columns(i, &bounds, &mut kept_cols);
        }
        let kept_col = |c: usize| scene.only.is_none() || kept_cols.get(c).copied().unwrap_or(false);
        let mut c = 0;
        while c < n {
            let Some(key) = key_of(&cells[c], shade_per_ns, scene, kept, rank, kept_col(c)) else {
                c += 1;
                continue;
            };
            let mut e = c + 1;
            while e < n && key_of(&cells[e], shade_per_ns, scene, kept, rank, kept_col(e)) == Some(key) {
                e += 1;
            }
            let colours = shades.get(key.name as usize).unwrap_or(&grey);
            let (xa, xb) = (r.left() + c as f32 * w / n as f32, r.left() + e as f32 * w / n as f32);
            g.bars.add_colored_rect(
                Rect::from_min_max(Pos2::new(xa, ya), Pos2::new(xb, yb)),
                colours[if key.dim { 5 } else { key.shade as usize }],
            );
            g.rects += 1;
            if key.event.is_some() && yb - ya >= 10.0 {
                let name = names.name(key.name);
                let short = name.strip_prefix("MPI_").unwrap_or(name);
                if (xb - xa) >= short.len() as f32 * CHAR_W + 6.0 {
                    g.labels.push(Label { pos: Pos2::new(xa + 3.0, (ya + yb) / 2.0), text: short.to_string() });
                }
            }
            c = e;
        }
    }
}

/// Screen y of the lane of `rank` at `t` (its thread's lane, if any).
fn lane_y(scene: &Scene, rank: i32, t: i64, edge: trace_view::Edge) -> Option<f32> {
    let threads = scene.trace.analysed.as_ref().map(|a| &a.threads);
    scene.lanes.centre_at(rank, t, edge, threads).map(|y| scene.rect.top() + y - scene.scroll)
}

fn arrows(scene: &Scene, a: &crate::data::Analysed, g: &mut Geometry) {
    let (t0, t1) = scene.view.range();
    let w = scene.rect.width();
    let (top, bottom) = (scene.rect.top(), scene.rect.bottom());
    let base = if scene.dark { Color32::from_gray(220) } else { Color32::from_gray(20) };
    // Far too many in the range: count them (two binary searches per
    // length group), draw none. Otherwise those between visible lanes.
    let starting = a.messages.count_starting(t0, t1);
    if starting > MAX_WALK {
        g.arrows_skipped = starting;
        return;
    }
    let on = a.resolve(scene.only.map(|s| s.on).unwrap_or_default());
    for m in a.messages.overlapping(t0, t1) {
        if !a.message_kept(m.id as usize, on) {
            continue;
        }
        let (Some(ys), Some(yd)) =
            (lane_y(scene, m.src, m.t_send, Edge::Start), lane_y(scene, m.dst, m.t_recv, Edge::End))
        else {
            continue;
        };
        if (ys < top && yd < top) || (ys > bottom && yd > bottom) {
            continue;
        }
        if g.arrows.len() >= MAX_ARROWS {
            g.arrows_skipped += 1;
            continue;
        }
        let pa = Pos2::new(scene.rect.left() + scene.view.x_of(m.t_send as f64, w), ys);
        let pb = Pos2::new(scene.rect.left() + scene.view.x_of(m.t_recv as f64, w), yd);
        let hi = scene.highlight == Some((m.src, m.dst)) || scene.picked_msg == Some(m.id);
        let (col, width) = if hi {
            (Color32::from_rgb(255, 0, 160), 2.5)
        } else if scene.highlight.is_some() {
            (base.gamma_multiply(0.25), 1.0)
        } else {
            (base.gamma_multiply(0.8), 1.0)
        };
        add_arrow(&mut g.lines, pa, pb, width, col);
        g.arrows.push((pa, pb, m.id));
    }
}

fn collectives(scene: &Scene, a: &crate::data::Analysed, palette: &[Color32], g: &mut Geometry) {
    let (t0, t1) = scene.view.range();
    let w = scene.rect.width();
    let starting = a.count_colls(t0, t1);
    if starting > MAX_COLLS {
        g.colls_skipped = starting;
        return;
    }
    let on = a.resolve(scene.only.map(|s| s.on).unwrap_or_default());
    for s in a.colls_in(t0, t1).filter(|s| a.coll_kept(s.instance, on)) {
        if g.colls_drawn >= MAX_COLLS {
            g.colls_skipped += 1;
            continue;
        }
        let col = palette.get(s.name as usize).copied().unwrap_or(Color32::GRAY).gamma_multiply(0.9);
        let pts: Vec<Pos2> = s
            .members
            .iter()
            .filter_map(|&(rank, arrival, _)| {
                lane_y(scene, rank, arrival, Edge::Start)
                    .map(|y| Pos2::new(scene.rect.left() + scene.view.x_of(arrival as f64, w), y))
            })
            .collect();
        for p in pts.windows(2) {
            add_line(&mut g.lines, p[0], p[1], 1.5, col);
        }
        g.colls_drawn += 1;
    }
}

/// The message arrow within `tol` px of `p`, if any (the nearest).
pub fn arrow_at(g: &Geometry, p: Pos2, tol: f32) -> Option<u64> {
    let dist = |a: Pos2, b: Pos2| {
        let d = b - a;
        let l2 = d.length_sq().max(1e-6);
        let t = ((p - a).dot(d) / l2).clamp(0.0, 1.0);
        (a + d * t - p).length()
    };
    g.arrows
        .iter()
        .map(|&(a, b, id)| (dist(a, b), id))
        .filter(|(d, _)| *d <= tol)
        .min_by(|x, y| x.0.total_cmp(&y.0))
        .map(|(_, id)| id)
}

/// Height of a user region's band, and the distance between the bands of
/// nesting levels, px.
pub const REGION_BAND: (f32, f32) = (2.5, 3.0);
/// Nesting levels of user regions drawn.
pub const REGION_DEPTHS: u16 = 3;

/// The user region whose band is at `p` (within `tol` px): (index into
/// `Lod::ranks`, index into the rank's regions).
pub fn region_at(
    trace: &Trace,
    lanes: &Lanes,
    view: &TimeView,
    rect: Rect,
    scroll: f32,
    p: Pos2,
    tol: f32,
) -> Option<(usize, usize)> {
    let a = trace.analysed.as_ref()?;
    if lanes.lane_h < 8.0 {
        return None;
    }
    let k = lanes.row_at(p.y - rect.top() + scroll)?;
    let (Row::Rank(i) | Row::Thread { rank: i, .. }) = lanes.rows[k] else { return None };
    let regs = a.regions.get(usize::try_from(trace.lod.ranks[i].rank).ok()?)?;
    let dy = p.y - (rect.top() + lanes.tops[k] - scroll + 1.0);
    let depth = (dy / REGION_BAND.1).floor();
    if !(0.0..REGION_DEPTHS as f32).contains(&depth) {
        return None;
    }
    let depth = depth as u16;
    let w = rect.width().max(1.0);
    let t = view.t_of(p.x - rect.left(), w);
    let d = tol as f64 * view.span() / w as f64;
    // Regions of that depth starting before the point, latest first (the
    // innermost ones are short; a few hundred back covers any nesting).
    let end = regs.partition_point(|r| (r.t0 as f64) <= t + d);
    (end.saturating_sub(256)..end).rev().find(|&j| regs[j].depth == depth && regs[j].t1 as f64 >= t - d).map(|j| (i, j))
}

/// The call of the lane at `p` under the pointer (or within `tol` px):
/// (index into `Lod::ranks`, index of the call).
pub fn call_at(
    trace: &Trace,
    lanes: &Lanes,
    view: &TimeView,
    rect: Rect,
    scroll: f32,
    p: Pos2,
    tol: f32,
) -> Option<(usize, usize)> {
    let k = lanes.row_at(p.y - rect.top() + scroll)?;
    let (i, lane) = match lanes.rows[k] {
        Row::Rank(i) => (i, None),
        Row::Thread { rank, lane, .. } => (rank, Some(lane)),
        Row::Host { .. } => return None,
    };
    let threads = trace.analysed.as_ref().map(|a| &a.threads);
    let rank_data = &trace.lod.ranks[i].data;
    // On a thread's lane: that thread's call, as the rank's call.
    let lane = lane.zip(threads);
    let data = lane.map(|(l, th)| th.data(l)).unwrap_or(rank_data);
    let as_rank = |c: usize| match lane {
        Some((l, th)) => th.rank_call(l, c, rank_data, &trace.lod),
        None => Some(c),
    };
    let t = view.t_of(p.x - rect.left(), rect.width());
    if let Some(c) = data.call_at(t.floor() as i64) {
        return as_rank(c).map(|c| (i, c));
    }
    let d = tol as f64 * view.span() / rect.width().max(1.0) as f64;
    let near = data.starting_in((t - d).floor() as i64, (t + d).ceil() as i64);
    near.min_by_key(|&c| (data.call(c).t_start as f64 - t).abs() as i64).and_then(as_rank).map(|c| (i, c))
}
