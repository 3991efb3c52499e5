//! Every key binding, in one table: the dispatcher and the help overlay
//! both read it, so the help lists every key there is.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Quit,
    Suspend,
    Help,
    Left,
    Right,
    PanLeft,
    PanRight,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    ZoomIn,
    ZoomOut,
    Fit,
    Mark,
    ZoomSelection,
    NextCall,
    PrevCall,
    Fold,
    FoldAll,
    Search,
    NextMatch,
    PrevMatch,
    NextSlowColl,
    PrevSlowColl,
    NextLateSender,
    PrevLateSender,
    NextWorstWait,
    PrevWorstWait,
    WaitKind,
    CriticalPath,
    Partner,
    NextPanel,
    PrevPanel,
    Panel(u8),
    TogglePanel,
    Regions,
    Sort,
    SortReverse,
    PanelDown,
    PanelUp,
    Clear,
}

/// A key: a character, a special key, or either with Ctrl.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Code(KeyCode),
    Ctrl(char),
    Shift(KeyCode),
}

impl Key {
    fn matches(&self, e: &KeyEvent) -> bool {
        let ctrl = e.modifiers.contains(KeyModifiers::CONTROL);
        let shift = e.modifiers.contains(KeyModifiers::SHIFT);
        match (*self, e.code) {
            (Key::Char(c), KeyCode::Char(x)) => !ctrl && x == c,
            (Key::Ctrl(c), KeyCode::Char(x)) => ctrl && x.eq_ignore_ascii_case(&c),
            (Key::Code(k), code) => !ctrl && !shift && k == code,
            (Key::Shift(k), code) => shift && k == code,
            _ => false,
        }
    }
}

/// One binding: its keys, how the help writes them, what it does.
pub struct Binding {
    pub keys: &'static [Key],
    pub label: &'static str,
    pub action: Action,
    pub help: &'static str,
}

use Action as A;
use Key::{Char as C, Code, Ctrl, Shift};

macro_rules! b {
    ($keys:expr, $label:expr, $action:expr, $help:expr) => {
        Binding { keys: $keys, label: $label, action: $action, help: $help }
    };
}

/// The bindings, in the order the help shows them.
pub const BINDINGS: &[Binding] = &[
    b!(&[C('q'), Ctrl('c')], "q  Ctrl-C", A::Quit, "quit"),
    b!(&[Ctrl('z')], "Ctrl-Z", A::Suspend, "suspend (back to the shell; fg resumes)"),
    b!(&[C('?'), Code(KeyCode::F(1))], "?  F1", A::Help, "this help (any key closes it)"),
    b!(&[Code(KeyCode::Left), C('h')], "←  h", A::Left, "cursor one column left"),
    b!(&[Code(KeyCode::Right), C('l')], "→  l", A::Right, "cursor one column right"),
    b!(&[Shift(KeyCode::Left), C('H')], "Shift-←  H", A::PanLeft, "pan left by a quarter screen"),
    b!(&[Shift(KeyCode::Right), C('L')], "Shift-→  L", A::PanRight, "pan right by a quarter screen"),
    b!(&[Code(KeyCode::Up), C('k')], "↑  k", A::Up, "previous rank"),
    b!(&[Code(KeyCode::Down), C('j')], "↓  j", A::Down, "next rank"),
    b!(&[Code(KeyCode::PageUp)], "PgUp", A::PageUp, "ranks one page up"),
    b!(&[Code(KeyCode::PageDown)], "PgDn", A::PageDown, "ranks one page down"),
    b!(&[Code(KeyCode::Home)], "Home", A::Home, "go to the start of the trace"),
    b!(&[Code(KeyCode::End)], "End", A::End, "go to the end of the trace"),
    b!(&[C('+'), C('='), C('i')], "+  i", A::ZoomIn, "zoom in at the cursor"),
    b!(&[C('-'), C('o')], "-  o", A::ZoomOut, "zoom out at the cursor"),
    b!(&[C('0'), C('f')], "0  f", A::Fit, "fit the whole trace"),
    b!(&[C('m')], "m", A::Mark, "mark the cursor (start of a selection)"),
    b!(&[C('z')], "z", A::ZoomSelection, "zoom to the selection (mark to cursor)"),
    b!(&[C('e'), Code(KeyCode::Tab)], "e", A::NextCall, "next call on this rank"),
    b!(&[C('E')], "E", A::PrevCall, "previous call on this rank"),
    b!(&[Code(KeyCode::Enter)], "Enter", A::Fold, "fold or unfold this group of ranks"),
    b!(&[C('F')], "F", A::FoldAll, "fold or unfold all groups"),
    b!(&[C('/')], "/", A::Search, "search and filter (see below)"),
    b!(&[C('n')], "n", A::NextMatch, "next match"),
    b!(&[C('N')], "N", A::PrevMatch, "previous match"),
    b!(&[C('c')], "c", A::NextSlowColl, "next slow collective (large arrival spread)"),
    b!(&[C('C')], "C", A::PrevSlowColl, "previous slow collective"),
    b!(&[C('w')], "w", A::NextLateSender, "next late sender"),
    b!(&[C('W')], "W", A::PrevLateSender, "previous late sender"),
    b!(&[C('v')], "v", A::NextWorstWait, "worst wait of the chosen kind, then the next worst"),
    b!(&[C('V')], "V", A::PrevWorstWait, "back to the previous, worse, wait"),
    b!(&[C('t')], "t", A::WaitKind, "choose the kind of wait for v (late sender, N x N...)"),
    b!(&[C('x')], "x", A::CriticalPath, "show or hide the critical path (red)"),
    b!(&[C('g')], "g", A::Partner, "go to the other end of the message"),
    b!(&[C('1')], "1", A::Panel(0), "panel: details of the call under the cursor"),
    b!(&[C('2')], "2", A::Panel(1), "panel: profile"),
    b!(&[C('3')], "3", A::Panel(2), "panel: collective costs"),
    b!(&[C('4')], "4", A::Panel(3), "panel: wait states"),
    b!(&[C('5')], "5", A::Panel(4), "panel: communication matrix"),
    b!(&[C('6')], "6", A::Panel(5), "panel: trace info and problems"),
    b!(&[C('7')], "7", A::Panel(6), "panel: MPI-IO and one-sided"),
    b!(&[C('8')], "8", A::Panel(7), "panel: call-tree profile and hardware counters"),
    b!(&[C(']')], "]", A::NextPanel, "next panel"),
    b!(&[C('[')], "[", A::PrevPanel, "previous panel"),
    b!(&[C('p')], "p", A::TogglePanel, "hide or show the panel"),
    b!(&[C('r')], "r", A::Regions, "hide or show the user regions (band above each rank)"),
    b!(&[C('s')], "s", A::Sort, "profile: sort by the next column"),
    b!(&[C('S')], "S", A::SortReverse, "profile: reverse the order"),
    b!(&[C('J')], "J", A::PanelDown, "scroll the panel down"),
    b!(&[C('K')], "K", A::PanelUp, "scroll the panel up"),
    b!(&[Code(KeyCode::Esc)], "Esc", A::Clear, "clear the mark, the filter and messages"),
];

/// Mouse gestures, for the help.
pub const MOUSE: &[(&str, &str)] = &[
    ("wheel", "zoom in or out at the pointer"),
    ("Shift-wheel", "scroll the ranks"),
    ("click", "put the cursor there"),
    ("drag", "pan"),
    ("right-drag, Shift-drag", "select a time range and zoom to it"),
];

/// Search syntax, for the help.
pub const SEARCH: &[(&str, &str)] = &[
    ("NAME  call=NAME", "calls whose name contains NAME (allreduce, MPI_Recv)"),
    ("rank=3  rank=2-5", "only these ranks (also hides the others)"),
    ("comm=0  comm=world", "communicator id or name"),
    ("tag=7", "message tag"),
    ("dur>1ms  min=20us", "at least this long"),
    ("region=NAME", "user regions instead of calls (with rank= and dur>)"),
];

/// The action of a key, if any.
pub fn action(e: &KeyEvent) -> Option<Action> {
    BINDINGS.iter().find(|b| b.keys.iter().any(|k| k.matches(e))).map(|b| b.action)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_key_is_bound_twice() {
        let all: Vec<Key> = BINDINGS.iter().flat_map(|b| b.keys.iter().copied()).collect();
        for (i, k) in all.iter().enumerate() {
            assert!(!all[i + 1..].contains(k), "{k:?} bound twice");
        }
        let ev = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
        assert_eq!(action(&ev('q')), Some(Action::Quit));
        assert_eq!(action(&KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)), Some(Action::Quit));
        assert_eq!(action(&ev('c')), Some(Action::NextSlowColl));
        assert_eq!(action(&KeyEvent::new(KeyCode::Left, KeyModifiers::SHIFT)), Some(Action::PanLeft));
        assert_eq!(action(&KeyEvent::new(KeyCode::Char('H'), KeyModifiers::SHIFT)), Some(Action::PanLeft));
    }
}
