//! Drawing the viewer with egui, and turning input into [`GuiApp`] calls.
//!
//! Mouse on the timeline: wheel zooms about the pointer, horizontal wheel
//! (or Shift+wheel) pans, drag pans (time and lanes), Shift+drag selects
//! a time range (the side views follow it), right-drag measures, click
//! picks a call or a message arrow. Keys (when no text field has focus):
//! W/S or +/- zoom, [ and ] make the lanes thinner or thicker, A/D or ←/-> pan, ↑/down scroll the lanes, Home shows all,
//! Z zooms to the selection, J jumps to the partner of the picked message,
//! N/Shift+N go through search results, Esc clears selection and highlight.

use egui::{
    Color32, Event, Key, Modifiers, MouseWheelUnit, PointerButton, Pos2, Rect, Role, Sense, Shape, Stroke, Ui, Vec2,
    WidgetInfo,
};

use crate::app::{GeometryKey, GuiApp, Pick, Tab};
use crate::lanes::Row;
use crate::stats::{Log2Hist, ProfileCol};
use crate::timeline::{self, Scene};
use crate::view::{ticks, TimeView};

/// Width of the lane names, px.
pub const GUTTER_W: f32 = 84.0;
/// Height of the time ruler, px.
pub const RULER_H: f32 = 22.0;
/// Largest matrix drawn as one widget per cell (clickable through the
/// accessibility tree); larger ones are painted.
pub const MATRIX_WIDGETS: usize = 64;

/// Transient input state of the timeline (kept in egui's memory).
#[derive(Clone, Copy, Debug, Default)]
struct Drag {
    /// Time where a selection or measure drag started, and whether it measures.
    from: Option<(f64, bool)>,
}

impl GuiApp {
    /// Draws the whole viewer into `ui` and handles its input. A panic in
    /// here is caught and shown instead of ending the program.
    pub fn show(&mut self, ui: &mut Ui) {
        if let Some(why) = &self.crashed {
            let why = why.clone();
            egui::CentralPanel::default_margins().show(ui, |ui| {
                ui.heading("The viewer hit an internal error");
                ui.label(why);
                if ui.button("Try again").clicked() {
                    self.crashed = None;
                }
            });
            return;
        }
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.show_inner(ui)));
        if let Err(p) = r {
            let what = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
            self.crashed = Some(format!("internal error: {}", what.unwrap_or_default()));
        }
    }

    fn show_inner(&mut self, ui: &mut Ui) {
        if self.poll() || self.loading() {
            ui.ctx().request_repaint_after(std::time::Duration::from_millis(50));
        }
        let dt = ui.input(|i| i.stable_dt).min(0.1);
        if self.animate(dt) {
            ui.ctx().request_repaint();
        }
        // The compared trace follows this one's animation; then whichever
        // the input moves, the other follows.
        self.couple_from_a();
        let before = self.views();
        egui::Panel::top("toolbar").show(ui, |ui| self.toolbar(ui));
        if self.trace.is_none() {
            egui::CentralPanel::default_margins().show(ui, |ui| self.not_loaded(ui));
            return;
        }
        egui::Panel::right("side").default_size(380.0).show(ui, |ui| self.side(ui));
        egui::CentralPanel::no_frame().show(ui, |ui| {
            if self.compare.is_some() {
                self.timelines_compared(ui);
            } else {
                self.timeline(ui);
            }
        });
        self.couple(before);
    }

    /// This trace above, the compared one below, each with its name.
    fn timelines_compared(&mut self, ui: &mut Ui) {
        let full = ui.available_rect_before_wrap();
        let mid = full.center().y;
        let top = Rect::from_min_max(full.min, Pos2::new(full.right(), mid - 2.0));
        let bottom = Rect::from_min_max(Pos2::new(full.left(), mid + 2.0), full.max);
        ui.scope_builder(egui::UiBuilder::new().max_rect(top), |ui| {
            ui.label(format!("A: {}", self.dir.display()));
            self.timeline(ui);
        });
        ui.painter().hline(full.x_range(), mid, Stroke::new(2.0, ui.visuals().widgets.noninteractive.bg_stroke.color));
        let Some(mut b) = self.compare.take() else { return };
        ui.scope_builder(egui::UiBuilder::new().max_rect(bottom), |ui| {
            let off =
                b.trace.as_ref().zip(self.trace.as_ref()).map(|(x, y)| x.lod.span().0 - y.lod.span().0).unwrap_or(0);
            ui.label(format!(
                "B: {} (times aligned at the start: B = A {} {})",
                b.dir.display(),
                if off < 0 { "-" } else { "+" },
                analyzers::fmt_ns(off.abs())
            ));
            if b.trace.is_some() {
                let picked = b.picked;
                b.timeline(ui);
                if b.picked != picked && b.picked.is_some() {
                    self.details_of_b = true;
                    self.tab = Tab::Details;
                }
            } else {
                b.not_loaded(ui);
            }
        });
        self.compare = Some(b);
    }

    fn toolbar(&mut self, ui: &mut Ui) {
        ui.horizontal(|ui| {
            ui.strong("mpitrace gui");
            ui.label(self.dir.display().to_string());
            ui.separator();
            let l = ui.label("Filter");
            let mut text = self.filter_text.clone();
            let r = ui
                .add(
                    egui::TextEdit::singleline(&mut text)
                        .hint_text("send kind=coll rank=0-3 comm=0 tag=7 dur>1ms")
                        .desired_width(180.0),
                )
                .labelled_by(l.id);
            if r.changed() {
                self.set_filter(&text);
            }
            if let Some(e) = &self.filter_error {
                ui.colored_label(Color32::RED, e);
            } else if self.call_set_pending() {
                ui.spinner();
                ui.label("finding the calls of comm=/tag=");
                ui.ctx().request_repaint_after(std::time::Duration::from_millis(50));
            }
            let l = ui.label("Find");
            let mut text = self.find_text.clone();
            let r = ui
                .add(egui::TextEdit::singleline(&mut text).hint_text("call name, rank=, dur>").desired_width(140.0))
                .labelled_by(l.id);
            if r.changed() {
                self.find_text = text.clone();
            }
            if r.lost_focus() && ui.input(|i| i.key_pressed(Key::Enter)) || ui.button("Search").clicked() {
                if let Err(e) = self.find(&text) {
                    self.filter_error = Some(e);
                }
            }
            if self.poll_find() {
                ui.ctx().request_repaint();
            }
            if self.find_pending() {
                ui.spinner();
                ui.label("searching");
                ui.ctx().request_repaint_after(std::time::Duration::from_millis(50));
            } else if !self.found.is_empty() {
                let more = if self.found.len() >= crate::app::MAX_FOUND { "+ (the earliest)" } else { "" };
                ui.label(format!("{}/{}{more} found", self.found_pos + 1, self.found.len()));
                if ui.button("Next").clicked() {
                    self.go_found(self.found_pos + 1);
                }
            } else if !self.find_text.is_empty() {
                ui.label("0 found");
            }
            ui.separator();
            ui.checkbox(&mut self.show_critical, "Critical path")
                .on_hover_text("The report's critical path: a red band under the calls and gaps on it");
            if ui.button("All").on_hover_text("Show the whole trace (Home)").clicked() {
                self.reset_view();
            }
            if let Some(l) = &self.loader {
                if self.trace.is_none() {
                    let f = l.progress.fraction() as f32;
                    ui.add(egui::ProgressBar::new(f).desired_width(120.0).text(format!("reading {:.0}%", f * 100.0)));
                } else {
                    ui.label(format!("analysing ({:.0} s)", l.started.elapsed().as_secs_f32()));
                }
                ui.spinner();
            }
            ui.label(format!("frame {:.1} ms", self.build_ms));
        });
    }

    fn not_loaded(&mut self, ui: &mut Ui) {
        if let Some(e) = &self.open_error {
            ui.heading("Could not open the trace");
            ui.label(e);
            ui.label("A trace directory holds meta.json and events/ (finished runs) or journal/ (crashed runs).");
        } else if let Some(l) = &self.loader {
            ui.heading("Opening the trace…");
            let p = &l.progress;
            ui.add(egui::ProgressBar::new(p.fraction() as f32).show_percentage());
            let rows = p.rows.load(std::sync::atomic::Ordering::Relaxed);
            ui.label(format!("{rows} rows read, {:.1} s", l.started.elapsed().as_secs_f32()));
        }
    }

    fn timeline(&mut self, ui: &mut Ui) {
        self.layout();
        let full = ui.available_rect_before_wrap();
        let (resp, painter) = ui.allocate_painter(full.size(), Sense::click_and_drag());
        let label = self.label;
        resp.widget_info(|| WidgetInfo::labeled(Role::Canvas, true, label));
        let dark = ui.visuals().dark_mode;
        let lanes_rect = Rect::from_min_max(Pos2::new(full.left() + GUTTER_W, full.top() + RULER_H), full.max);
        let ruler_rect =
            Rect::from_min_max(Pos2::new(lanes_rect.left(), full.top()), Pos2::new(full.right(), lanes_rect.top()));
        let gutter =
            Rect::from_min_max(Pos2::new(full.left(), lanes_rect.top()), Pos2::new(lanes_rect.left(), full.bottom()));
        self.scroll_by(0.0, lanes_rect.height());
        self.timeline_input(ui, &resp, lanes_rect, gutter);
        let w = lanes_rect.width();
        // Geometry from the level-of-detail core, rebuilt only when what it shows changed.
        let picked_msg = match self.picked {
            Some(Pick::Message(id)) => Some(id),
            _ => None,
        };
        let key = GeometryKey {
            view: self.view,
            rect: lanes_rect,
            scroll: self.scroll,
            filter: self.filter.clone(),
            lanes_gen: self.lanes_gen,
            highlight: self.highlight,
            picked_msg,
            dark,
            analysed: self.trace.as_ref().is_some_and(|t| t.analysed.is_some()),
            critical: self.show_critical,
            call_set: !self.call_set_pending(),
        };
        if self.geometry_key.as_ref() != Some(&key) {
            let kept = self.kept();
            let only = self.call_set();
            let started = std::time::Instant::now();
            let Some(trace) = &self.trace else { return };
            let scene = Scene {
                trace,
                lanes: &self.lanes,
                view: self.view,
                rect: lanes_rect,
                scroll: self.scroll,
                kept: &kept,
                min_dur: self.filter.min_dur,
                only: only.as_deref(),
                highlight: self.highlight,
                picked_msg,
                dark,
                critical: self.show_critical,
            };
            self.geometry = timeline::build(&scene, &self.palette, &mut self.cells);
            let bars = std::mem::take(&mut self.geometry.bars);
            let lines = std::mem::take(&mut self.geometry.lines);
            self.meshes = (bars.into(), lines.into());
            self.geometry_key = Some(key);
            self.build_ms = started.elapsed().as_secs_f32() * 1000.0;
        }
        let g = &self.geometry;
        let bg = if dark { Color32::from_gray(30) } else { Color32::from_gray(245) };
        painter.rect_filled(full, 0.0, bg);
        let clip = painter.with_clip_rect(lanes_rect);
        // Lane stripes and names.
        let text_col = ui.visuals().text_color();
        let font = egui::FontId::proportional(11.0);
        let names = painter.with_clip_rect(gutter);
        for k in self.lanes.visible(self.scroll, lanes_rect.height()) {
            let y0 = lanes_rect.top() + self.lanes.tops[k] - self.scroll;
            let y1 = lanes_rect.top() + self.lanes.tops[k + 1] - self.scroll;
            let label = match &self.lanes.rows[k] {
                Row::Host { host, ranks, folded } => {
                    clip.rect_filled(
                        Rect::from_x_y_ranges(lanes_rect.x_range(), y0..=y1),
                        0.0,
                        text_col.gamma_multiply(0.08),
                    );
                    format!("{} {host} ({ranks})", if *folded { "+" } else { "-" })
                }
                Row::Rank(i) => {
                    if k % 2 == 1 {
                        clip.rect_filled(
                            Rect::from_x_y_ranges(lanes_rect.x_range(), y0..=y1),
                            0.0,
                            text_col.gamma_multiply(0.03),
                        );
                    }
                    let threads = self.trace.as_ref().and_then(|t| {
                        let a = t.analysed.as_ref()?;
                        Some(a.threads.of(t.lod.ranks[*i].rank).len()).filter(|&n| n > 0)
                    });
                    let name =
                        self.trace.as_ref().map(|t| format!("rank {}", t.lod.ranks[*i].rank)).unwrap_or_default();
                    match threads {
                        Some(n) => format!("+ {name} ({n} threads)"),
                        None => name,
                    }
                }
                Row::Thread { rank, thread, .. } => {
                    if k % 2 == 1 {
                        clip.rect_filled(
                            Rect::from_x_y_ranges(lanes_rect.x_range(), y0..=y1),
                            0.0,
                            text_col.gamma_multiply(0.03),
                        );
                    }
                    let first = k == 0 || !matches!(self.lanes.rows[k - 1], Row::Thread { rank: r, .. } if r == *rank);
                    match (&self.trace, first) {
                        (Some(t), true) => format!("- rank {} t{thread}", t.lod.ranks[*rank].rank),
                        _ => format!("      t{thread}"),
                    }
                }
            };
            if y1 - y0 >= 9.0 {
                names.text(
                    Pos2::new(gutter.left() + 4.0, (y0 + y1) / 2.0),
                    egui::Align2::LEFT_CENTER,
                    label,
                    font.clone(),
                    text_col,
                );
            }
        }
        clip.add(Shape::mesh(self.meshes.0.clone()));
        let label_col = Color32::from_gray(15);
        for l in &g.labels {
            clip.text(l.pos, egui::Align2::LEFT_CENTER, &l.text, font.clone(), label_col);
        }
        clip.add(Shape::mesh(self.meshes.1.clone()));
        // Ruler.
        painter.rect_filled(ruler_rect, 0.0, text_col.gamma_multiply(0.06));
        let ruler = painter.with_clip_rect(ruler_rect);
        for (x, label) in ticks(&self.view, w, 90.0, self.origin() as f64) {
            let x = lanes_rect.left() + x;
            ruler.line_segment(
                [Pos2::new(x, ruler_rect.bottom() - 6.0), Pos2::new(x, ruler_rect.bottom())],
                Stroke::new(1.0, text_col),
            );
            ruler.text(
                Pos2::new(x + 2.0, ruler_rect.top() + 2.0),
                egui::Align2::LEFT_TOP,
                label,
                font.clone(),
                text_col,
            );
            clip.line_segment(
                [Pos2::new(x, lanes_rect.top()), Pos2::new(x, lanes_rect.bottom())],
                Stroke::new(1.0, text_col.gamma_multiply(0.06)),
            );
        }
        // Selection and measure.
        let xs = |t: f64| lanes_rect.left() + self.view.x_of(t, w);
        if let Some((a, b)) = self.selection {
            let r = Rect::from_x_y_ranges(xs(a as f64)..=xs(b as f64), full.top()..=full.bottom());
            painter.with_clip_rect(lanes_rect.union(ruler_rect)).rect_filled(
                r,
                0.0,
                Color32::from_rgba_unmultiplied(66, 133, 244, 40),
            );
        }
        if let Some((a, b)) = self.measure {
            let (xa, xb) = (xs(a), xs(b));
            let y = lanes_rect.top() + 12.0;
            let st = Stroke::new(1.5, Color32::from_rgb(255, 0, 160));
            clip.line_segment([Pos2::new(xa, lanes_rect.top()), Pos2::new(xa, lanes_rect.bottom())], st);
            clip.line_segment([Pos2::new(xb, lanes_rect.top()), Pos2::new(xb, lanes_rect.bottom())], st);
            clip.line_segment([Pos2::new(xa, y), Pos2::new(xb, y)], st);
            let text = analyzers::fmt_ns((b - a).abs().round() as i64);
            clip.text(Pos2::new((xa + xb) / 2.0, y - 2.0), egui::Align2::CENTER_BOTTOM, text, font.clone(), st.color);
        }
        if g.arrows_skipped > 0 || g.colls_skipped > 0 {
            let note = format!("{} messages and {} collectives not drawn: zoom in", g.arrows_skipped, g.colls_skipped);
            painter.text(
                lanes_rect.right_bottom() - Vec2::new(6.0, 6.0),
                egui::Align2::RIGHT_BOTTOM,
                note,
                font,
                text_col,
            );
        }
        if let Some(p) = self.hovered {
            let lines = self.details(Some(p));
            if !lines.is_empty() {
                resp.on_hover_ui_at_pointer(|ui| {
                    for (k, v) in lines.iter().take(8) {
                        ui.label(format!("{k}: {v}"));
                    }
                });
            }
        }
    }

    fn timeline_input(&mut self, ui: &Ui, resp: &egui::Response, lanes_rect: Rect, gutter: Rect) {
        let w = lanes_rect.width();
        let mut drag: Drag = ui.data(|d| d.get_temp(resp.id)).unwrap_or_default();
        let pointer = resp.hover_pos();
        let t_at = |p: Pos2, v: &TimeView| v.t_of(p.x - lanes_rect.left(), w);
        if let Some(p) = pointer {
            let events = ui.input(|i| i.events.clone());
            for e in events {
                if let Event::MouseWheel { unit, delta, modifiers, .. } = e {
                    let d = match unit {
                        MouseWheelUnit::Point => delta,
                        MouseWheelUnit::Line => delta * 40.0,
                        MouseWheelUnit::Page => delta * 400.0,
                    };
                    if gutter.contains(p) {
                        self.scroll_by(-d.y, lanes_rect.height());
                    } else if modifiers.shift || d.x.abs() > d.y.abs() {
                        self.pan(-(d.x + if modifiers.shift { d.y } else { 0.0 }), w);
                    } else {
                        self.zoom((-d.y as f64 * 0.003).exp(), t_at(p, &self.target));
                    }
                }
            }
            self.hovered = if lanes_rect.contains(p) { self.pick_at(p, lanes_rect) } else { None };
        } else {
            self.hovered = None;
        }
        let shift = ui.input(|i| i.modifiers.shift);
        if resp.drag_started() {
            // From where the button went down (the drag starts a few pixels later).
            if let Some(p) = ui.input(|i| i.pointer.press_origin()).or(resp.interact_pointer_pos()) {
                let t = t_at(p, &self.view);
                if resp.dragged_by(PointerButton::Secondary) {
                    drag.from = Some((t, true));
                } else if shift {
                    drag.from = Some((t, false));
                }
            }
        }
        if resp.dragged() {
            if let (Some((t0, measure)), Some(p)) = (drag.from, resp.interact_pointer_pos()) {
                let t = t_at(p, &self.view);
                if measure {
                    self.measure = Some((t0, t));
                } else {
                    self.select(t0.round() as i64, t.round() as i64);
                }
            } else if resp.dragged_by(PointerButton::Primary) {
                let d = resp.drag_delta();
                self.pan(-d.x, w);
                self.view = self.target;
                self.scroll_by(-d.y, lanes_rect.height());
            }
        }
        if resp.drag_stopped() {
            drag.from = None;
        }
        if resp.clicked() {
            if let Some(p) = resp.interact_pointer_pos() {
                if gutter.contains(p) {
                    self.click_gutter(p, lanes_rect);
                } else if let Some(pick) = self.pick_at(p, lanes_rect) {
                    match pick {
                        Pick::Call { rank, call } => self.pick_call(rank, call),
                        Pick::Message(id) => self.pick_message(id),
                        Pick::Region { rank, region } => self.pick_region(rank, region),
                    }
                }
            }
        }
        ui.data_mut(|d| d.insert_temp(resp.id, drag));
        if self.keys && !ui.ctx().egui_wants_keyboard_input() {
            self.keys(ui, w, lanes_rect.height());
        }
    }

    fn pick_at(&self, p: Pos2, lanes_rect: Rect) -> Option<Pick> {
        if let Some(id) = timeline::arrow_at(&self.geometry, p, 3.0) {
            return Some(Pick::Message(id));
        }
        let t = self.trace.as_ref()?;
        if let Some((rank, region)) = timeline::region_at(t, &self.lanes, &self.view, lanes_rect, self.scroll, p, 2.0) {
            return Some(Pick::Region { rank, region });
        }
        timeline::call_at(t, &self.lanes, &self.view, lanes_rect, self.scroll, p, 3.0)
            .map(|(rank, call)| Pick::Call { rank, call })
    }

    fn click_gutter(&mut self, p: Pos2, lanes_rect: Rect) {
        let Some(k) = self.lanes.row_at(p.y - lanes_rect.top() + self.scroll) else { return };
        match &self.lanes.rows[k] {
            Row::Host { host, .. } => {
                let h = host.clone();
                self.toggle_fold(&h);
            }
            Row::Thread { rank, .. } => self.toggle_threads(*rank),
            Row::Rank(i) if self.threads_folded.contains(i) => self.toggle_threads(*i),
            Row::Rank(_) => {}
        }
    }

    fn keys(&mut self, ui: &Ui, w: f32, h: f32) {
        let pressed = |k: Key| ui.input(|i| i.key_pressed(k));
        let mid = (self.target.t0 + self.target.t1) / 2.0;
        if pressed(Key::W) || pressed(Key::Plus) || pressed(Key::Equals) {
            self.zoom(0.7, mid);
        }
        if pressed(Key::S) || pressed(Key::Minus) {
            self.zoom(1.0 / 0.7, mid);
        }
        if pressed(Key::A) || pressed(Key::ArrowLeft) {
            self.pan(-w * 0.2, w);
        }
        if pressed(Key::D) || pressed(Key::ArrowRight) {
            self.pan(w * 0.2, w);
        }
        if pressed(Key::ArrowUp) {
            self.scroll_by(-self.lane_h * 3.0, h);
        }
        if pressed(Key::ArrowDown) {
            self.scroll_by(self.lane_h * 3.0, h);
        }
        if pressed(Key::PageUp) {
            self.scroll_by(-h * 0.9, h);
        }
        if pressed(Key::PageDown) {
            self.scroll_by(h * 0.9, h);
        }
        if pressed(Key::OpenBracket) {
            self.set_lane_height(self.lane_h / 1.25);
        }
        if pressed(Key::CloseBracket) {
            self.set_lane_height(self.lane_h * 1.25);
        }
        if pressed(Key::Home) {
            self.reset_view();
        }
        if pressed(Key::Z) {
            if let Some((a, b)) = self.selection {
                self.show_range(a, b);
            }
        }
        if pressed(Key::J) {
            self.jump_to_partner();
        }
        if pressed(Key::N) {
            let shift = ui.input(|i| i.modifiers.shift);
            let n = self.found.len().max(1);
            self.go_found(if shift { self.found_pos + n - 1 } else { self.found_pos + 1 });
        }
        if pressed(Key::Escape) {
            self.selection = None;
            self.measure = None;
            self.highlight = None;
        }
    }

    fn side(&mut self, ui: &mut Ui) {
        if let Some(mut b) = self.compare.take() {
            // Which trace the side views are of.
            ui.horizontal(|ui| {
                ui.label("Side views of");
                ui.selectable_value(&mut self.side_of_b, false, "A");
                ui.selectable_value(&mut self.side_of_b, true, "B");
            });
            if self.side_of_b && b.trace.is_some() {
                ui.push_id("side-b", |ui| b.side(ui));
                self.compare = Some(b);
                return;
            }
            self.compare = Some(b);
        }
        ui.horizontal_wrapped(|ui| {
            for t in Tab::ALL {
                if t != Tab::Compare || self.compare.is_some() {
                    ui.selectable_value(&mut self.tab, t, t.title());
                }
            }
        });
        let (a, b) = self.range();
        let what = if self.selection.is_some() { "Selection" } else { "Whole trace" };
        ui.horizontal(|ui| {
            let o = self.origin();
            ui.label(format!(
                "{what}: {} – {} ({})",
                analyzers::fmt_ns(a - o),
                analyzers::fmt_ns(b - o),
                analyzers::fmt_ns(b - a)
            ));
            if self.selection.is_some() && ui.small_button("Clear").clicked() {
                self.selection = None;
            }
        });
        if self.loading() {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("analysing: messages, collectives and wait states follow");
            });
        }
        self.stats();
        if self.stats_pending() {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("computing the numbers of this range (those shown are of the previous one)");
            });
            ui.ctx().request_repaint_after(std::time::Duration::from_millis(50));
        }
        ui.separator();
        egui::ScrollArea::both().auto_shrink([false, false]).show(ui, |ui| match self.tab {
            Tab::Profile => self.profile_view(ui),
            Tab::Collectives => self.colls_view(ui),
            Tab::Waits => self.waits_view(ui),
            Tab::Matrix => self.matrix_view(ui),
            Tab::Histograms => self.hist_view(ui),
            Tab::Details => self.details_view(ui),
            Tab::Problems => self.problems_view(ui),
            Tab::IoRma => self.io_rma_view(ui),
            Tab::Compare => self.compare_view(ui),
        });
    }

    fn profile_view(&mut self, ui: &mut Ui) {
        let (col, desc) = self.sort;
        let Some(s) = self.stats() else { return };
        let rows = s.profile.clone();
        let calls = s.calls;
        ui.label(format!("{calls} calls"));
        let mut clicked = None;
        egui::Grid::new("profile").striped(true).show(ui, |ui| {
            for c in ProfileCol::ALL {
                let arrow = if c == col {
                    if desc {
                        " v"
                    } else {
                        " ^"
                    }
                } else {
                    ""
                };
                if ui.button(format!("{}{arrow}", c.title())).clicked() {
                    clicked = Some(c);
                }
            }
            ui.end_row();
            for r in rows.iter().take(200) {
                ui.label(&r.name);
                ui.label(r.count.to_string());
                ui.label(analyzers::fmt_ns(r.time));
                ui.label(analyzers::fmt_ns(r.time / r.count.max(1) as i64));
                ui.label(analyzers::fmt_ns(r.max));
                ui.label(r.ranks.to_string());
                ui.end_row();
            }
        });
        if let Some(c) = clicked {
            self.sort_by(c);
        }
        self.call_paths_view(ui);
    }

    fn colls_view(&mut self, ui: &mut Ui) {
        let Some(s) = self.stats() else { return };
        if s.colls.is_empty() {
            ui.label("No collective operations start in this range (or the analyses are not ready).");
            return;
        }
        egui::Grid::new("colls").striped(true).show(ui, |ui| {
            for h in [
                "Operation",
                "Size per rank",
                "Instances",
                "Time",
                "Waiting",
                "Mean spread",
                "Max spread",
                "Most often last",
                "Bytes",
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for r in &s.colls {
                ui.label(&r.name);
                ui.label(if r.size.1 == 0 {
                    "0 B".to_string()
                } else {
                    format!("{} – {}", analyzers::fmt_bytes(r.size.0), analyzers::fmt_bytes(r.size.1))
                });
                ui.label(r.instances.to_string());
                ui.label(analyzers::fmt_ns(r.time));
                ui.label(analyzers::fmt_ns(r.wait));
                ui.label(analyzers::fmt_ns(r.mean_spread));
                ui.label(analyzers::fmt_ns(r.max_spread));
                ui.label(r.last.map(|(rank, n)| format!("rank {rank} ({n}x)")).unwrap_or_default());
                ui.label(analyzers::fmt_bytes(r.bytes));
                ui.end_row();
            }
        });
    }

    fn waits_view(&mut self, ui: &mut Ui) {
        if let Some(a) = self.trace.as_ref().and_then(|t| t.analysed.clone()) {
            ui.strong("Whole trace (Worst: go to the largest instance, then the next largest)");
            for (k, p) in a.an.waits.states.patterns.iter().enumerate() {
                if p.time_ns <= 0 {
                    continue;
                }
                ui.label(format!("{}: {} in {} calls", p.name, analyzers::fmt_ns(p.time_ns), p.count));
                // Wrapped: the side panel may be narrow.
                ui.horizontal_wrapped(|ui| {
                    let n = a.worst.by_kind.get(k).map(Vec::len).unwrap_or(0);
                    let at = self.worst_pos.get(k).copied().flatten();
                    if ui
                        .add_enabled(n > 0, egui::Button::new(format!("Worst {}", p.name)))
                        .on_hover_text("The largest instance first, then the next largest")
                        .clicked()
                    {
                        self.jump_worst(k, true);
                    }
                    if ui
                        .add_enabled(at.is_some_and(|x| x > 0), egui::Button::new(format!("Previous {}", p.name)))
                        .clicked()
                    {
                        self.jump_worst(k, false);
                    }
                    ui.label(match at {
                        Some(x) => format!("{} of {n}", x + 1),
                        None => format!("{n} kept"),
                    });
                });
            }
            ui.separator();
        }
        let Some(s) = self.stats() else { return };
        if s.waits.is_empty() {
            ui.label("No waiting in this range.");
            return;
        }
        ui.strong("In the range, by call, site and the rank waited for");
        egui::Grid::new("waits").striped(true).show(ui, |ui| {
            for h in ["Call", "Site", "Waiting for", "Time", "Count"] {
                ui.strong(h);
            }
            ui.end_row();
            for r in s.waits.iter().take(200) {
                ui.label(&r.call);
                ui.label(&r.site);
                ui.label(format!("rank {}", r.cause));
                ui.label(analyzers::fmt_ns(r.time));
                ui.label(r.count.to_string());
                ui.end_row();
            }
        });
    }

    fn matrix_view(&mut self, ui: &mut Ui) {
        ui.horizontal(|ui| {
            ui.selectable_value(&mut self.matrix_bytes, true, "Bytes");
            ui.selectable_value(&mut self.matrix_bytes, false, "Messages");
            if let Some((s, d)) = self.highlight {
                ui.label(format!("highlighted: {s} -> {d}"));
            }
        });
        let bytes = self.matrix_bytes;
        let hl = self.highlight;
        let Some(s) = self.stats() else { return };
        if s.n == 0 {
            ui.label("No messages (or the analyses are not ready).");
            return;
        }
        let n = s.n;
        let pick = |(b, c): (i64, u64)| if bytes { b as f64 } else { c as f64 };
        let val = |i: usize, j: usize| pick(s.cell(i, j));
        let max = s.pairs.values().map(|&x| pick(x)).fold(0.0, f64::max).max(1.0);
        let side = (ui.available_width() - 40.0).clamp(100.0, 600.0);
        let cell = (side / n as f32).clamp(1.0, 28.0);
        ui.label(format!("{} messages; rows: sender, columns: receiver", s.messages));
        let mut click = None;
        let colour = |v: f64| {
            if v <= 0.0 {
                return Color32::from_gray(120).gamma_multiply(0.15);
            }
            let t = (v.ln_1p() / max.ln_1p()) as f32;
            Color32::from_rgb((40.0 + 215.0 * t) as u8, (60.0 + 100.0 * (1.0 - t)) as u8, (200.0 * (1.0 - t)) as u8)
        };
        // Rank labels: every `every`-th rank, so that labels do not overlap.
        let text_col = ui.visuals().text_color();
        let font = egui::FontId::proportional(10.0);
        let every = |px: f32| ((18.0 / px).ceil() as usize).max(1);
        if n <= MATRIX_WIDGETS {
            let cs = cell.max(6.0) - 1.0;
            let step = every(cs + 1.0);
            // A label painted centred in a cell-sized slot (wider text overflows
            // it rather than widening the column).
            let label = |ui: &mut Ui, size: Vec2, k: Option<usize>| {
                let (rect, _) = ui.allocate_exact_size(size, Sense::hover());
                if let Some(k) = k.filter(|k| k % step == 0) {
                    ui.painter().text(rect.center(), egui::Align2::CENTER_CENTER, k, font.clone(), text_col);
                }
            };
            egui::Grid::new("matrix").spacing(Vec2::splat(1.0)).show(ui, |ui| {
                label(ui, Vec2::new(22.0, 12.0), None);
                for j in 0..n {
                    label(ui, Vec2::new(cs, 12.0), Some(j));
                }
                ui.end_row();
                for i in 0..n {
                    label(ui, Vec2::new(22.0, cs), Some(i));
                    for j in 0..n {
                        let (b, c) = s.cell(i, j);
                        let (rect, r) = ui.allocate_exact_size(Vec2::splat(cell.max(6.0) - 1.0), Sense::click());
                        let label = format!("{i} -> {j}");
                        r.widget_info(|| WidgetInfo::labeled(Role::Button, true, &label));
                        let mut fill = colour(val(i, j));
                        if hl == Some((i as i32, j as i32)) {
                            fill = Color32::from_rgb(255, 0, 160);
                        }
                        ui.painter().rect_filled(rect, 0.0, fill);
                        let r = r.on_hover_text(format!("{label}: {} in {c} messages", analyzers::fmt_bytes(b)));
                        if r.clicked() {
                            click = Some((i as i32, j as i32));
                        }
                    }
                    ui.end_row();
                }
            });
        } else {
            let (outer, r) = ui.allocate_exact_size(Vec2::new(side + 30.0, side + 14.0), Sense::click());
            let rect = Rect::from_min_size(outer.min + Vec2::new(30.0, 14.0), Vec2::splat(side));
            let mut mesh = egui::Mesh::default();
            let k = n.div_ceil(side as usize).max(1);
            let blocks = n.div_ceil(k);
            let bw = side / blocks as f32;
            // Labels at the first rank of every few blocks, about 40 px apart.
            let step = (((40.0 / bw).ceil() as usize).max(1) * k).next_power_of_two().max(every(bw / k as f32));
            for first in (0..n).step_by(step) {
                let at = (first / k) as f32 * bw;
                let p = ui.painter();
                p.text(rect.left_top() + Vec2::new(at, -2.0), egui::Align2::LEFT_BOTTOM, first, font.clone(), text_col);
                p.text(rect.left_top() + Vec2::new(-3.0, at), egui::Align2::RIGHT_TOP, first, font.clone(), text_col);
            }
            let mut sums = vec![0.0; blocks * blocks];
            for (&(i, j), &x) in &s.pairs {
                if let Some(v) = sums.get_mut((i / k) * blocks + j / k) {
                    *v += pick(x);
                }
            }
            for (b, v) in sums.iter().enumerate() {
                let min = rect.min + Vec2::new((b % blocks) as f32 * bw, (b / blocks) as f32 * bw);
                mesh.add_colored_rect(Rect::from_min_size(min, Vec2::splat(bw)), colour(v / (k * k) as f64));
            }
            ui.painter().add(Shape::mesh(mesh));
            if r.clicked() && k == 1 {
                if let Some(p) = r.interact_pointer_pos().filter(|p| rect.contains(*p)) {
                    let (j, i) = (((p.x - rect.left()) / bw) as i32, ((p.y - rect.top()) / bw) as i32);
                    click = Some((i, j));
                }
            }
        }
        if let Some((i, j)) = click {
            self.click_matrix(i, j);
        }
    }

    fn hist_view(&mut self, ui: &mut Ui) {
        let Some(s) = self.stats() else { return };
        let (sizes, durs) = (s.msg_sizes.clone(), s.call_durations.clone());
        ui.heading("Message sizes");
        hist(ui, &sizes, analyzers::fmt_bytes, "Size", "Messages");
        ui.separator();
        ui.heading("Call durations");
        hist(ui, &durs, analyzers::fmt_ns, "Duration", "Calls");
    }

    fn details_view(&mut self, ui: &mut Ui) {
        if self.details_of_b {
            if let Some(mut b) = self.compare.take() {
                ui.label(format!("B: {}", b.dir.display()));
                b.details_view(ui);
                self.compare = Some(b);
                return;
            }
        }
        let lines = self.details(self.picked);
        if lines.is_empty() {
            ui.label("Click a call, a message arrow or a region band on the timeline.");
            self.comms_list(ui);
            return;
        }
        egui::Grid::new("details").show(ui, |ui| {
            for (k, v) in &lines {
                ui.label(k);
                ui.label(v);
                ui.end_row();
            }
        });
        let has_msg = lines.iter().any(|(k, _)| k == "message");
        if has_msg && ui.button("Jump to partner (J)").clicked() {
            self.jump_to_partner();
        }
        if matches!(self.picked, Some(Pick::Region { .. } | Pick::Call { .. })) && ui.button("Zoom to it").clicked() {
            self.zoom_to_picked();
        }
    }

    /// The communicators of the trace, with the ids `comm=` takes.
    fn comms_list(&self, ui: &mut Ui) {
        let Some(a) = self.trace.as_ref().and_then(|t| t.analysed.as_ref()) else { return };
        let comms = &a.an.model.comms;
        if comms.is_empty() {
            return;
        }
        ui.separator();
        ui.strong("Communicators (filter with comm=ID)");
        egui::Grid::new("comms").striped(true).show(ui, |ui| {
            for h in ["ID", "Communicator", "Ranks"] {
                ui.strong(h);
            }
            ui.end_row();
            for c in comms.iter().take(500) {
                ui.label(format!("comm={}", c.id));
                ui.label(c.label());
                ui.label(if c.members.is_empty() { "?".to_string() } else { c.members.len().to_string() });
                ui.end_row();
            }
        });
        if comms.len() > 500 {
            ui.label(format!("and {} more", comms.len() - 500));
        }
    }

    fn compare_view(&mut self, ui: &mut Ui) {
        let Some(b) = &self.compare else {
            ui.label("Open a second trace to compare: mpitrace gui DIR --compare OTHER");
            return;
        };
        let bdir = b.dir.display().to_string();
        let b_error = b.open_error.clone();
        ui.label(format!("A: {}", self.dir.display()));
        ui.label(format!("B: {bdir}"));
        if let Some(e) = b_error {
            ui.colored_label(Color32::RED, format!("B could not be opened: {e}"));
            return;
        }
        let Some(rows) = self.compare_rows() else {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("computing the numbers of both traces");
            });
            ui.ctx().request_repaint_after(std::time::Duration::from_millis(50));
            return;
        };
        let total = |f: fn(&crate::app::CompareRow) -> i64| rows.iter().map(f).sum::<i64>();
        let (ta, tb) = (total(|r| r.a_time), total(|r| r.b_time));
        ui.label(format!(
            "time in MPI: A {}, B {} ({}{})",
            analyzers::fmt_ns(ta),
            analyzers::fmt_ns(tb),
            if tb >= ta { "+" } else { "-" },
            analyzers::fmt_ns((tb - ta).abs())
        ));
        egui::Grid::new("compare").striped(true).show(ui, |ui| {
            for h in ["Call", "A time", "B time", "B - A", "A calls", "B calls"] {
                ui.strong(h);
            }
            ui.end_row();
            for r in rows.iter().take(200) {
                ui.label(&r.name);
                ui.label(analyzers::fmt_ns(r.a_time));
                ui.label(analyzers::fmt_ns(r.b_time));
                let d = r.delta();
                ui.label(format!("{}{}", if d >= 0 { "+" } else { "-" }, analyzers::fmt_ns(d.abs())));
                ui.label(r.a_count.to_string());
                ui.label(r.b_count.to_string());
                ui.end_row();
            }
        });
    }

    /// The report's I/O and one-sided sections (whole trace).
    fn io_rma_view(&mut self, ui: &mut Ui) {
        let Some(a) = self.trace.as_ref().and_then(|t| t.analysed.as_ref()) else {
            ui.label("The analyses are not ready.");
            return;
        };
        let doc = analyzers::iorma::document(&a.an.io_rma);
        if doc.is_empty() {
            ui.label("No MPI-IO or one-sided calls.");
        }
        document(ui, &doc);
    }

    /// Below the profile, when the trace has them: the report's call-tree
    /// profile (call paths, depth-first, indented) and hardware counters,
    /// for the whole trace, in a section of their own.
    fn call_paths_view(&mut self, ui: &mut Ui) {
        let Some(a) = self.trace.as_ref().and_then(|t| t.analysed.as_ref()) else { return };
        let mut doc = analyzers::calltree::document(&a.an.call_tree);
        doc.extend(analyzers::counters::document(&a.an.counters));
        if doc.is_empty() {
            return;
        }
        ui.add_space(8.0);
        egui::CollapsingHeader::new("Call paths and counters (whole trace)")
            .default_open(true)
            .show(ui, |ui| document(ui, &doc));
    }

    fn problems_view(&mut self, ui: &mut Ui) {
        let Some(t) = &self.trace else { return };
        let probs = t.problems();
        ui.label(format!("{} ranks, {} calls read", t.lod.ranks.len(), t.lod.calls()));
        if probs.is_empty() {
            ui.label("No problems: the trace is complete.");
        }
        for p in probs {
            ui.label(p);
        }
    }
}

/// Width of a histogram's bars at the largest count, px.
const HIST_W: f32 = 160.0;

/// A histogram with power-of-two bins: one row per non-empty bin (its
/// range on the left, the bar, the count and share), titled axes, and the
/// scale of the bars below them.
/// Shows a report document: headings, paragraphs, tables as grids, bars
/// as their labels and values.
fn document(ui: &mut Ui, doc: &[analyzers::report::Block]) {
    use analyzers::report::{Align, Block};
    for (i, b) in doc.iter().enumerate() {
        match b {
            Block::Heading(h) => {
                ui.add_space(6.0);
                ui.heading(h);
            }
            Block::Para(p, _) => {
                ui.label(p);
            }
            Block::Table(t) => {
                egui::Grid::new(("document", i)).striped(true).show(ui, |ui| {
                    for h in &t.headers {
                        ui.strong(h);
                    }
                    ui.end_row();
                    for row in &t.rows {
                        for (c, (text, _)) in row.iter().enumerate() {
                            if t.align.get(c) == Some(&Align::Right) {
                                ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| ui.label(text));
                            } else {
                                ui.label(text);
                            }
                        }
                        ui.end_row();
                    }
                });
            }
            Block::Bars(bars) => {
                egui::Grid::new(("bars", i)).show(ui, |ui| {
                    for (label, frac, value) in bars {
                        ui.label(label);
                        ui.add(egui::ProgressBar::new(*frac as f32).desired_width(120.0));
                        ui.label(value);
                        ui.end_row();
                    }
                });
            }
            Block::Figure(_) => {}
        }
    }
}

fn hist(ui: &mut Ui, h: &Log2Hist, fmt: impl Fn(i64) -> String, x_title: &str, y_title: &str) {
    let total = h.total();
    if total == 0 {
        ui.label("none in this range");
        return;
    }
    let max = h.counts.iter().copied().max().unwrap_or(1).max(1);
    egui::Grid::new(ui.next_auto_id()).striped(true).show(ui, |ui| {
        ui.strong(x_title);
        ui.strong(format!("{y_title} per bin"));
        ui.strong(y_title);
        ui.strong("share");
        ui.end_row();
        for (k, &c) in h.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let lo = if k == 0 { 0 } else { 1i64 << k };
            ui.label(format!("{} – {}", fmt(lo), fmt(1i64 << (k + 1).min(62))));
            let (rect, _) = ui.allocate_exact_size(Vec2::new(HIST_W, 12.0), Sense::hover());
            let wbar = HIST_W * c as f32 / max as f32;
            ui.painter().rect_filled(
                Rect::from_min_size(rect.min, Vec2::new(wbar.max(1.0), 12.0)),
                0.0,
                Color32::from_rgb(66, 133, 244),
            );
            ui.label(c.to_string());
            ui.label(format!("{:.0}%", c as f64 * 100.0 / total as f64));
            ui.end_row();
        }
        // The scale under the bars: 0 on the left, the largest count on the right.
        ui.label("");
        ui.allocate_ui_with_layout(Vec2::new(HIST_W, 14.0), egui::Layout::left_to_right(egui::Align::Center), |ui| {
            ui.set_width(HIST_W);
            ui.small("0");
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| ui.small(format!("axis max {max}")));
        });
        ui.label(format!("{total} in all"));
        ui.end_row();
    });
}

/// Modifiers of a Shift-drag (tests).
pub const SHIFT: Modifiers = Modifiers::SHIFT;
