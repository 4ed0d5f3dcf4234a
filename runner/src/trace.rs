//! Instruction traces: where a message spent its instructions, function by function.
//!
//! A module installed with [`crate::Options::tracing`] carries hooks at every function entry
//! and exit and around every call of an imported (ic0) function. The hooks are code the
//! instrumentation injects, so they are free (docs/metering.md §1): a traced message costs
//! exactly what an untraced one does. Each hook records the instructions executed so far
//! ([`TraceEvent`]); page charges the runtime makes between two hooks are recorded as events
//! of their own, and so are `performance_counter` readings, which delimit canbench's bench
//! window.
//!
//! [`Trace::fold`] turns the events into stacks with their self instructions, the input of a
//! flame graph. Every instruction of the window lands on exactly one stack: the folded
//! instructions add up to the window's length, to the instruction.

use crate::function_names::FunctionNames;
use crate::page_map::{MemoryKind, PageLog, PageTouch};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A page charge the runtime made (docs/metering.md §6), as it appears in a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PageCharge {
    /// 4 KiB stable pages first dirtied by a write ([`crate::Metering::PocketIc13`]).
    StableDirty,
    /// 64 KiB heap pages first accessed ([`crate::Metering::Current`]).
    HeapAccess,
    /// 64 KiB heap pages first written ([`crate::Metering::Current`]).
    HeapWrite,
    /// 64 KiB stable pages first accessed ([`crate::Metering::Current`]).
    StableAccess,
    /// 64 KiB stable pages first written ([`crate::Metering::Current`]).
    StableWrite,
}

impl PageCharge {
    /// The frame name a flame graph shows for it.
    pub fn frame(self) -> &'static str {
        match self {
            PageCharge::StableDirty => "[stable pages dirtied]",
            PageCharge::HeapAccess => "[heap pages first accessed]",
            PageCharge::HeapWrite => "[heap pages first written]",
            PageCharge::StableAccess => "[stable pages first accessed]",
            PageCharge::StableWrite => "[stable pages first written]",
        }
    }
}

/// One event of a trace; `at` is the instructions the message had executed at that point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceEvent {
    /// The function with this index in the original module (imports first) was entered.
    Enter {
        /// Function index.
        function: u32,
        /// Instructions executed before it.
        at: u64,
    },
    /// The function with this index returned.
    Exit {
        /// Function index.
        function: u32,
        /// Instructions executed by then.
        at: u64,
    },
    /// The runtime charged `instructions` for pages, ending at `at`.
    Pages {
        /// What was charged.
        kind: PageCharge,
        /// How much.
        instructions: u64,
        /// Instructions executed once it was charged.
        at: u64,
    },
    /// `pages` more 4 KiB heap pages were written for the first time in the message since the
    /// previous event, in the frame open then. [`crate::Metering::PocketIc13`] charges them
    /// after the message (docs/metering.md §6), so they take no instructions of the timeline;
    /// [`Trace::fold_with_heap_charge`] gives each frame its share of that charge.
    HeapPagesWritten {
        /// Pages first written since the previous event.
        pages: u64,
    },
    /// `performance_counter(0)` returned `at`.
    Counter {
        /// The value read.
        at: u64,
    },
    /// The message's execution ended (later charges, like the heap dirty-page charge after
    /// an update, come after it).
    End {
        /// Instructions executed.
        at: u64,
    },
}

/// Records the events of the message in progress, the functions open and the memory pages
/// first touched ([`PageLog`]).
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    pub events: Vec<TraceEvent>,
    /// Heap pages first written in the message up to the last [`TraceEvent::HeapPagesWritten`].
    pub heap_pages_written: u64,
    /// The functions open now, innermost last, as the hooks entered and left them.
    open: Vec<u32>,
    /// Functions with lower indices are imports (ic0 functions).
    imported: u32,
    /// The first touches of memory pages ([`crate::Metering::Current`]).
    pages: PageLog,
}

impl Recorder {
    /// A recorder for a module with `imported` imported functions.
    pub fn new(imported: u32) -> Recorder {
        Recorder {
            imported,
            ..Recorder::default()
        }
    }

    /// Records that `function` was entered at `at` instructions.
    pub fn enter(&mut self, function: u32, at: u64) {
        self.events.push(TraceEvent::Enter { function, at });
        self.open.push(function);
    }

    /// Records that `function` (the innermost open one) returned at `at` instructions.
    pub fn exit(&mut self, function: u32, at: u64) {
        self.events.push(TraceEvent::Exit { function, at });
        self.open.pop();
    }

    /// The function a first touch of a page of `memory` is attributed to now. Heap: the
    /// innermost open function, the only one that ran since the last hook (an ic0 function
    /// while a system call runs, for the bytes it reads or writes itself). Stable: the
    /// innermost Wasm function, the caller of the `stable*` function being executed. `None`
    /// outside any function.
    fn toucher(&self, memory: MemoryKind) -> Option<u32> {
        let mut open = self.open.iter().rev().copied();
        match memory {
            MemoryKind::Heap => open.next(),
            MemoryKind::Stable => open.find(|function| *function >= self.imported),
        }
    }

    /// Records the first accesses (or, if `write`, the first writes) of `pages` of `memory`,
    /// each charged `price` instructions, by the function running now.
    pub fn touched(&mut self, memory: MemoryKind, pages: &[u64], write: bool, price: u64) {
        let by = self.toucher(memory);
        for &page in pages {
            if write {
                self.pages.written(memory, page, by, price);
            } else {
                self.pages.accessed(memory, page, by, price);
            }
        }
    }

    /// The message goes on with a fresh heap (an upgrade's new instance).
    pub fn new_heap(&mut self) {
        self.pages.new_heap();
    }

    /// The trace of the message, with the functions named by `names`.
    pub fn finish(self, names: Arc<FunctionNames>) -> Trace {
        let pages = self.pages.finish(&names);
        Trace {
            events: self.events,
            names,
            pages,
        }
    }
}

/// The events of one message, with the names of the module's functions and the memory pages
/// the message touched.
#[derive(Debug, Clone)]
pub struct Trace {
    events: Vec<TraceEvent>,
    names: Arc<FunctionNames>,
    pages: Vec<PageTouch>,
}

/// Which part of a trace to fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The whole message.
    Message,
    /// canbench's bench window: from the first `performance_counter(0)` reading of the
    /// message to the reading `instructions` later (the bench's total). Only frames entered
    /// inside the window are shown; instructions of frames already open belong to the root,
    /// as in canbench's own traces.
    Bench {
        /// The bench's total instructions.
        instructions: u64,
    },
}

/// Why a trace could not be folded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FoldError {
    /// The bench window's start or end reading is not in the trace.
    NoWindow(String),
    /// An exit does not match the frame on top of the stack.
    Unbalanced(String),
}

impl fmt::Display for FoldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FoldError::NoWindow(why) => write!(f, "no bench window in the trace: {why}"),
            FoldError::Unbalanced(why) => write!(f, "unbalanced trace: {why}"),
        }
    }
}

impl std::error::Error for FoldError {}

/// A stack of a folded trace: function names from the root down.
pub type Stack = Vec<String>;

/// Stacks with the instructions spent in their top frame (self instructions).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folded {
    /// Self instructions by stack.
    pub stacks: BTreeMap<Stack, u64>,
}

impl FromIterator<(Stack, u64)> for Folded {
    fn from_iter<I: IntoIterator<Item = (Stack, u64)>>(stacks: I) -> Self {
        let mut folded = Folded::default();
        for (stack, instructions) in stacks {
            folded.add(stack, instructions);
        }
        folded
    }
}

/// One function's instructions in a folded trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionCost {
    /// The function (or charge) name.
    pub name: String,
    /// Instructions spent in it, its callees excluded.
    pub self_instructions: u64,
    /// Instructions spent in it and its callees (a recursive function counted once per
    /// stack).
    pub inclusive_instructions: u64,
}

impl Folded {
    /// Every instruction of the fold.
    pub fn total(&self) -> u64 {
        self.stacks.values().sum()
    }

    /// Adds `instructions` to `stack` (for charges made after the traced execution, such as
    /// the heap dirty-page charge of an update).
    pub fn add(&mut self, stack: Stack, instructions: u64) {
        if instructions > 0 {
            *self.stacks.entry(stack).or_default() += instructions;
        }
    }

    /// The folded lines flame graph tools read: `a;b;c <self instructions>`, one per stack.
    pub fn lines(&self) -> String {
        let mut text = String::new();
        for (stack, instructions) in &self.stacks {
            text.push_str(&stack.join(";"));
            text.push(' ');
            text.push_str(&instructions.to_string());
            text.push('\n');
        }
        text
    }

    /// Every function's self and inclusive instructions, most inclusive first (ties by
    /// name).
    pub fn functions(&self) -> Vec<FunctionCost> {
        let mut costs: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for (stack, instructions) in &self.stacks {
            let mut seen: Vec<&str> = Vec::new();
            for name in stack {
                if !seen.contains(&name.as_str()) {
                    seen.push(name);
                    costs.entry(name).or_default().1 += instructions;
                }
            }
            if let Some(top) = stack.last() {
                costs.entry(top).or_default().0 += instructions;
            }
        }
        let mut functions: Vec<FunctionCost> = costs
            .into_iter()
            .map(
                |(name, (self_instructions, inclusive_instructions))| FunctionCost {
                    name: name.to_string(),
                    self_instructions,
                    inclusive_instructions,
                },
            )
            .collect();
        functions.sort_by(|a, b| {
            b.inclusive_instructions
                .cmp(&a.inclusive_instructions)
                .then_with(|| a.name.cmp(&b.name))
        });
        functions
    }
}

/// A frame of the fold: a function, or a page charge under the function that caused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Frame {
    Function(u32),
    Pages(PageCharge),
}

/// The state of a fold: the open frames and the instructions folded so far.
struct Folder {
    start: u64,
    end: u64,
    /// Open frames; those entered before the window are not shown.
    open: Vec<(Frame, bool)>,
    /// Instructions executed up to the last event.
    now: u64,
    stacks: BTreeMap<Vec<Frame>, u64>,
    /// Heap pages first written, by the stack that wrote them.
    heap_pages: BTreeMap<Vec<Frame>, u64>,
}

impl Folder {
    fn visible(&self) -> Vec<Frame> {
        self.open
            .iter()
            .filter(|(_, shown)| *shown)
            .map(|(frame, _)| *frame)
            .collect()
    }

    /// Gives the instructions from `now` to `at` (the part inside the window) to `stack`.
    fn advance(&mut self, at: u64, stack: Vec<Frame>) {
        let from = self.now.max(self.start);
        let to = at.min(self.end);
        if to > from {
            *self.stacks.entry(stack).or_default() += to - from;
        }
        self.now = self.now.max(at);
    }

    fn event(&mut self, event: &TraceEvent) -> Result<(), FoldError> {
        match *event {
            TraceEvent::Enter { function, at } => {
                self.advance(at, self.visible());
                let shown = at >= self.start && at < self.end;
                self.open.push((Frame::Function(function), shown));
            }
            TraceEvent::Exit { function, at } => {
                self.advance(at, self.visible());
                match self.open.pop() {
                    Some((Frame::Function(open), _)) if open == function => {}
                    other => {
                        return Err(FoldError::Unbalanced(format!(
                            "exit of function {function} with {other:?} open"
                        )))
                    }
                }
            }
            TraceEvent::Pages {
                kind,
                instructions,
                at,
            } => {
                let before = at.saturating_sub(instructions);
                self.advance(before, self.visible());
                let mut stack = self.visible();
                stack.push(Frame::Pages(kind));
                self.advance(at, stack);
            }
            TraceEvent::HeapPagesWritten { pages } => {
                *self.heap_pages.entry(self.visible()).or_default() += pages;
            }
            TraceEvent::Counter { at } | TraceEvent::End { at } => {
                self.advance(at, self.visible());
            }
        }
        Ok(())
    }
}

impl Trace {
    #[cfg(test)]
    pub(crate) fn new(events: Vec<TraceEvent>, names: Arc<FunctionNames>) -> Trace {
        Trace {
            events,
            names,
            pages: Vec::new(),
        }
    }

    /// The events, in order.
    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// Every 64 KiB page of heap or stable memory the message touched, with the functions
    /// that first accessed and first wrote it and what it was charged, ordered by memory,
    /// then page ([`PageTouch`]). Recorded under [`crate::Metering::Current`], which
    /// charges these pages (docs/metering.md §6); empty under other profiles. The
    /// instructions add up to the message's page charges: its [`crate::Breakdown`]'s
    /// `heap_regions_accessed`, `heap_regions_written`, `stable_regions_accessed` and
    /// `stable_regions_written`.
    pub fn page_touches(&self) -> &[PageTouch] {
        &self.pages
    }

    /// The name of function `index` of the traced module.
    pub fn function_name(&self, index: u32) -> String {
        self.names.name(index)
    }

    /// The instructions the traced execution ended at (before charges made after it).
    pub fn end(&self) -> Option<u64> {
        self.events.iter().rev().find_map(|event| match event {
            TraceEvent::End { at } => Some(*at),
            _ => None,
        })
    }

    /// The `[start, end)` instructions of `window`.
    fn bounds(&self, window: Window) -> Result<(u64, u64), FoldError> {
        let readings = || {
            self.events.iter().filter_map(|event| match event {
                TraceEvent::Counter { at } => Some(*at),
                _ => None,
            })
        };
        match window {
            Window::Message => {
                let end = self
                    .end()
                    .ok_or_else(|| FoldError::NoWindow("the message did not end".into()))?;
                Ok((0, end))
            }
            Window::Bench { instructions } => {
                let start = readings().next().ok_or_else(|| {
                    FoldError::NoWindow("performance_counter was never read".into())
                })?;
                let end = start + instructions;
                if !readings().any(|at| at == end) {
                    return Err(FoldError::NoWindow(format!(
                        "no reading {instructions} instructions after the first ({start})"
                    )));
                }
                Ok((start, end))
            }
        }
    }

    /// Folds `window` into stacks under a root frame named `root`.
    pub fn fold(&self, root: &str, window: Window) -> Result<Folded, FoldError> {
        self.folder(window)
            .map(|folder| self.named(root, folder.stacks).collect())
    }

    /// Folds the whole message, as [`Trace::fold`] does, and adds the heap charge made after
    /// it: `instructions` for `pages` pages ([`crate::Breakdown`]'s `heap_pages_dirtied`). Each
    /// frame that first wrote heap pages gets their share under a
    /// [`HEAP_PAGES_DIRTIED_FRAME`] frame of its own; what the trace did not see (pages
    /// written after the last hook, or found by comparing the heap) stays under the root.
    pub fn fold_with_heap_charge(
        &self,
        root: &str,
        pages: u64,
        instructions: u64,
    ) -> Result<Folded, FoldError> {
        let folder = self.folder(Window::Message)?;
        let mut folded: Folded = self.named(root, folder.stacks).collect();
        let mut attributed = 0;
        if let Some(price) = instructions.checked_div(pages) {
            for (mut stack, written) in self.named(root, folder.heap_pages) {
                let share = (written * price).min(instructions - attributed);
                stack.push(HEAP_PAGES_DIRTIED_FRAME.to_string());
                folded.add(stack, share);
                attributed += share;
            }
        }
        folded.add(
            vec![root.to_string(), HEAP_PAGES_DIRTIED_FRAME.to_string()],
            instructions - attributed,
        );
        Ok(folded)
    }

    /// Runs the events of `window` through a [`Folder`].
    fn folder(&self, window: Window) -> Result<Folder, FoldError> {
        let (start, end) = self.bounds(window)?;
        let mut folder = Folder {
            start,
            end,
            open: Vec::new(),
            now: 0,
            stacks: BTreeMap::new(),
            heap_pages: BTreeMap::new(),
        };
        for event in &self.events {
            folder.event(event)?;
        }
        let stack = folder.visible();
        folder.advance(end, stack);
        Ok(folder)
    }

    /// `stacks` with their frames named, under `root`.
    fn named<'a>(
        &'a self,
        root: &'a str,
        stacks: BTreeMap<Vec<Frame>, u64>,
    ) -> impl Iterator<Item = (Stack, u64)> + 'a {
        stacks.into_iter().map(move |(frames, count)| {
            let mut stack = vec![root.to_string()];
            stack.extend(frames.into_iter().map(|frame| match frame {
                Frame::Function(index) => self.names.name(index),
                Frame::Pages(kind) => kind.frame().to_string(),
            }));
            (stack, count)
        })
    }
}

/// The frame of the heap pages an update dirtied, charged after the message (pocketic-13).
pub const HEAP_PAGES_DIRTIED_FRAME: &str = "[heap pages dirtied, after the message]";

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn names() -> Arc<FunctionNames> {
        let mut names = HashMap::new();
        names.insert(1, "main".to_string());
        names.insert(2, "helper".to_string());
        Arc::new(FunctionNames { names, imported: 1 })
    }

    fn stack(frames: &[&str]) -> Stack {
        frames.iter().map(|f| f.to_string()).collect()
    }

    /// A message of 30 instructions: `main` (from 0) calls `helper` (from 10 to 25), with
    /// `in_main` recorded before the call and `in_helper` inside it.
    fn main_calls_helper(in_main: Vec<TraceEvent>, in_helper: Vec<TraceEvent>) -> Trace {
        use TraceEvent::*;
        let mut events = vec![Enter { function: 1, at: 0 }];
        events.extend(in_main);
        events.push(Enter {
            function: 2,
            at: 10,
        });
        events.extend(in_helper);
        events.extend([
            Exit {
                function: 2,
                at: 25,
            },
            Exit {
                function: 1,
                at: 30,
            },
            End { at: 30 },
        ]);
        Trace::new(events, names())
    }

    #[test]
    fn a_message_folds_into_self_instructions_that_add_up() {
        let pages = TraceEvent::Pages {
            kind: PageCharge::HeapAccess,
            instructions: 5,
            at: 20,
        };
        let trace = main_calls_helper(vec![], vec![pages]);
        let folded = trace.fold("m", Window::Message).unwrap();
        assert_eq!(folded.stacks[&stack(&["m", "main"])], 15);
        assert_eq!(folded.stacks[&stack(&["m", "main", "helper"])], 10);
        assert_eq!(
            folded.stacks[&stack(&["m", "main", "helper", "[heap pages first accessed]"])],
            5
        );
        assert_eq!(folded.total(), 30);
        let helper = folded
            .functions()
            .into_iter()
            .find(|f| f.name == "helper")
            .unwrap();
        assert_eq!(
            (helper.self_instructions, helper.inclusive_instructions),
            (10, 15)
        );
    }

    #[test]
    fn the_heap_charge_goes_to_the_writers_and_what_the_trace_missed_to_the_root() {
        use TraceEvent::HeapPagesWritten;
        let trace = main_calls_helper(
            vec![HeapPagesWritten { pages: 1 }],
            vec![HeapPagesWritten { pages: 2 }],
        );
        // Four pages charged, three of them seen by the trace.
        let folded = trace.fold_with_heap_charge("m", 4, 4_000).unwrap();
        let frame = HEAP_PAGES_DIRTIED_FRAME;
        assert_eq!(folded.stacks[&stack(&["m", "main", frame])], 1_000);
        assert_eq!(
            folded.stacks[&stack(&["m", "main", "helper", frame])],
            2_000
        );
        assert_eq!(folded.stacks[&stack(&["m", frame])], 1_000);
        assert_eq!(folded.total(), 30 + 4_000);
        // A query is not charged: nothing is added.
        let query = trace.fold_with_heap_charge("m", 0, 0).unwrap();
        assert_eq!(query, trace.fold("m", Window::Message).unwrap());
    }

    #[test]
    fn heap_touches_go_to_the_running_frame_and_stable_ones_to_the_wasm_caller() {
        // Function 0 is an import (unnamed here: `func_0`), 1 and 2 are defined.
        let mut recorder = Recorder::new(1);
        recorder.touched(MemoryKind::Heap, &[9], false, 10);
        recorder.enter(1, 0);
        recorder.enter(2, 5);
        recorder.touched(MemoryKind::Heap, &[0], false, 10);
        // `helper` calls the import; what the import touches itself is its own.
        recorder.enter(0, 6);
        recorder.touched(MemoryKind::Stable, &[3], false, 10);
        recorder.touched(MemoryKind::Stable, &[3], true, 10);
        recorder.touched(MemoryKind::Heap, &[1], true, 10);
        recorder.exit(0, 7);
        recorder.exit(2, 8);
        recorder.touched(MemoryKind::Heap, &[0], true, 10);
        recorder.exit(1, 9);
        let trace = recorder.finish(names());
        let touches: Vec<_> = trace
            .page_touches()
            .iter()
            .map(|t| {
                (
                    t.memory,
                    t.page,
                    t.accessed_by.as_str(),
                    t.written_by.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            touches,
            vec![
                (MemoryKind::Heap, 0, "helper", Some("main")),
                (MemoryKind::Heap, 1, "func_0", Some("func_0")),
                (MemoryKind::Heap, 9, crate::page_map::RUNTIME_TOUCHER, None),
                (MemoryKind::Stable, 3, "helper", Some("helper")),
            ]
        );
        assert_eq!(trace.events().len(), 6);
    }

    #[test]
    fn a_bench_window_keeps_what_lies_between_its_readings() {
        use TraceEvent::*;
        let trace = Trace::new(
            vec![
                Enter { function: 1, at: 0 },
                Counter { at: 100 },
                Enter {
                    function: 2,
                    at: 110,
                },
                Exit {
                    function: 2,
                    at: 150,
                },
                Counter { at: 170 },
                Exit {
                    function: 1,
                    at: 200,
                },
                End { at: 200 },
            ],
            names(),
        );
        let folded = trace
            .fold("bench", Window::Bench { instructions: 70 })
            .unwrap();
        // `main` was open before the window: its instructions go to the root.
        assert_eq!(folded.stacks[&stack(&["bench"])], 30);
        assert_eq!(folded.stacks[&stack(&["bench", "helper"])], 40);
        assert_eq!(folded.total(), 70);
        assert!(trace
            .fold("bench", Window::Bench { instructions: 71 })
            .is_err());
    }
}
