//! The process runtime: [`run`], [`background`], [`on_stop`], and the
//! lifetime of PROTOCOL section 3.6.
//!
//! A process that uses the SDK lives while a handler of a call, a background
//! task, or a listening endpoint runs. The reader of stdin does not count:
//! when nothing else runs, `run` returns, and so does `main`. EOF on stdin
//! means "stop now": the calls in flight fail, the stop hooks run, and `run`
//! returns.

use crate::error::{Error, Result};
use crate::interface::{Handler, Interface};
use crate::local::LocalCore;
use crate::peer::{LineReader, Link, Peer, Server};
use crate::signal::Signal;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

type StopHook = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()>>>>;

thread_local! {
    static CURRENT: RefCell<Option<Rc<Runtime>>> = const { RefCell::new(None) };
    static STOP_HOOKS: RefCell<Vec<StopHook>> = const { RefCell::new(Vec::new()) };
}

/// The state of the running process.
pub(crate) struct Runtime {
    /// The link to the core: stdin and stdout, or the in-process core of a test.
    pub(crate) core: Rc<Peer>,
    /// Handlers, background tasks and listening endpoints that run.
    alive: Cell<usize>,
    /// Whether the first request has arrived.
    started: Cell<bool>,
    /// Whether stdin has closed.
    eof: Cell<bool>,
    /// Whether a handler asked to end the process (`Ctx::exit_after_response`).
    end_requested: Cell<bool>,
    /// Whether the process is ending: every task stops.
    finished: Cell<bool>,
    main: Signal,
    shutdown: Signal,
    document: Option<fn() -> Value>,
}

/// The runtime of this process, when inside [`run`] or a test.
pub(crate) fn current() -> Option<Rc<Runtime>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// The link to the core, or an error outside [`run`] and tests.
pub(crate) fn core() -> Result<Rc<Peer>> {
    current().map(|rt| Rc::clone(&rt.core)).ok_or_else(|| {
        Error::new(
            "there is no Sausage runtime here: calls, locks and endpoints work inside \
             sausage_plugin::run and #[sausage_plugin::test]",
        )
    })
}

/// The `rpc.discover` document of the main interface (`null` in tests).
pub(crate) fn document() -> Value {
    current().and_then(|rt| rt.document).map(|f| f()).unwrap_or(Value::Null)
}

impl Runtime {
    fn install(core: Rc<Peer>, document: Option<fn() -> Value>) -> Rc<Runtime> {
        let rt = Rc::new(Runtime {
            core,
            alive: Cell::new(0),
            started: Cell::new(false),
            eof: Cell::new(false),
            end_requested: Cell::new(false),
            finished: Cell::new(false),
            main: Signal::default(),
            shutdown: Signal::default(),
            document,
        });
        CURRENT.with(|c| *c.borrow_mut() = Some(Rc::clone(&rt)));
        rt
    }

    pub(crate) fn mark_started(&self) {
        self.started.set(true);
    }

    /// Ends the process after the current turn (a handler's `exit_after_response`).
    pub(crate) fn request_end(&self) {
        self.end_requested.set(true);
        self.main.notify();
    }

    /// Stops every task; `block_on` then returns.
    fn shut_down(&self) {
        self.finished.set(true);
        self.shutdown.notify();
    }

    /// Reads stdin until EOF and gives each line to the core peer.
    fn spawn_stdin_reader(self: &Rc<Self>) {
        let rt = Rc::clone(self);
        spawn_task(self, false, async move {
            let stdin = wstd::io::stdin().into_inner();
            let mut lines = LineReader::default();
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                let n = match stdin.read(&mut buffer).await {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) => {
                        eprintln!("sausage-plugin: cannot read stdin: {e}");
                        break;
                    }
                };
                for line in lines.push(&buffer[..n]) {
                    rt.core.receive_line(&line);
                }
            }
            if let Some(line) = lines.finish() {
                rt.core.receive_line(&line);
            }
            rt.eof.set(true);
            rt.core.close(Error::stopping());
            rt.main.notify();
        });
    }
}

/// Decrements the count of living things when a task ends or is dropped.
struct TaskGuard {
    rt: Rc<Runtime>,
    alive: bool,
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        if self.alive {
            self.rt.alive.set(self.rt.alive.get() - 1);
            self.rt.main.notify();
        }
    }
}

/// Spawns a task that ends when the process ends. With `alive`, the process
/// lives while it runs.
pub(crate) fn spawn_task(rt: &Rc<Runtime>, alive: bool, task: impl Future<Output = ()> + 'static) {
    if rt.finished.get() {
        return;
    }
    if alive {
        rt.alive.set(rt.alive.get() + 1);
    }
    let guard = TaskGuard { rt: Rc::clone(rt), alive };
    let rt = Rc::clone(rt);
    wstd::runtime::spawn(async move {
        let _guard = guard;
        let ended = rt.shutdown.wait_until(|| rt.finished.get());
        // `ended` first: a task that has not run yet does not start after the end
        futures_lite::future::or(ended, task).await;
    })
    .detach();
}

/// Serves the main interface on stdin and stdout. Call it in `main`.
///
/// It answers `rpc.discover` with the OpenRPC document generated from the
/// code, `rpc.retired` with the `#[on_retired]` method (or `null`), and each
/// method of the `#[rpc]` impl. It returns when the process has nothing left
/// to do (PROTOCOL 3.6): no handler, no [`background`] task and no
/// [`listen`](crate::listen)ing endpoint runs. EOF on stdin stops the
/// process: the calls in flight fail, the [`on_stop`] hooks run, and `run`
/// returns.
///
/// The value must be cheap to create: the core also starts a process only to
/// call `rpc.discover`. Open files and databases in the methods.
///
/// # Example
///
/// ```no_run
/// use sausage_plugin::{Result, rpc};
///
/// /// A plugin that greets.
/// struct Hello;
///
/// #[rpc]
/// impl Hello {
///     /// Say hello.
///     fn hello(&self) -> Result<String> {
///         Ok("hello".into())
///     }
/// }
///
/// fn main() {
///     sausage_plugin::run(Hello);
/// }
/// ```
pub fn run<T: Interface>(interface: T) {
    wstd::runtime::block_on(async move {
        let handler: Rc<dyn Handler> = Rc::new(interface);
        let core = Peer::new(Link::Stdio, Some(Server { handler, endpoint: None }), "stdin");
        let rt = Runtime::install(core, Some(crate::discover::document::<T>));
        rt.spawn_stdin_reader();
        rt.main
            .wait_until(|| rt.end_requested.get() || rt.eof.get() || (rt.started.get() && rt.alive.get() == 0))
            .await;
        if rt.eof.get() && !rt.end_requested.get() {
            run_stop_hooks().await;
        }
        rt.shut_down();
    });
    CURRENT.with(|c| c.borrow_mut().take());
}

async fn run_stop_hooks() {
    let hooks = STOP_HOOKS.with(|h| std::mem::take(&mut *h.borrow_mut()));
    for hook in hooks {
        hook().await;
    }
}

/// Runs an async test: the body of `#[sausage_plugin::test]`.
///
/// Under the Sausage test runner (`SAUSAGE_PID` is set), calls go to the
/// runner on stdin and stdout. Without it (for example `cargo test` with
/// `sausage run` as the runner), the test answers `core.lock`,
/// `core.unlock`, `core.notify` and `core.log` in the process, and a call to
/// a plugin fails: a test has no other plugins.
#[doc(hidden)]
pub fn block_on_test<F: Future>(test: F) -> F::Output {
    let output = wstd::runtime::block_on(async move {
        let under_runner = std::env::var_os("SAUSAGE_PID").is_some();
        let core = if under_runner {
            Peer::new(Link::Stdio, None, "stdin")
        } else {
            Peer::new(Link::Local(LocalCore::new()), None, "the test's core")
        };
        let rt = Runtime::install(core, None);
        if under_runner {
            rt.spawn_stdin_reader();
        }
        let output = test.await;
        rt.shut_down();
        output
    });
    CURRENT.with(|c| c.borrow_mut().take());
    output
}

/// Runs `task` in this process, next to the handlers. The process lives
/// while it runs (PROTOCOL 3.6), so a handler can answer and leave work
/// behind, like a server loop.
///
/// The task may return `()` or a `Result<(), E>`; an error goes to stderr
/// (the journal).
///
/// # Panics
///
/// Outside [`run`] and `#[sausage_plugin::test]`, where no process runtime
/// exists.
///
/// # Example
///
/// ```no_run
/// use sausage_plugin::{Result, background, pid, rpc};
///
/// /// A plugin with a ticker.
/// struct Ticker;
///
/// #[rpc]
/// impl Ticker {
///     /// Start ticking to stderr ten times, and return the process ID at once.
///     fn start(&self) -> Result<String> {
///         background(async {
///             for i in 0..10 {
///                 eprintln!("tick {i}");
///                 sausage_plugin::wstd::task::sleep(sausage_plugin::wstd::time::Duration::from_secs(1)).await;
///             }
///         });
///         Ok(pid())
///     }
/// }
/// # fn main() {}
/// ```
pub fn background<F>(task: F)
where
    F: Future + 'static,
    F::Output: TaskOutput,
{
    let rt =
        current().expect("sausage_plugin::background runs only inside sausage_plugin::run or #[sausage_plugin::test]");
    spawn_task(&rt, true, async move { task.await.report() });
}

/// What a [`background`] task may return: `()` or `Result<(), E>` with an
/// error that displays.
///
/// ```
/// use sausage_plugin::TaskOutput;
///
/// ().report(); // nothing to report
/// Err::<(), _>("disk full").report(); // "a background task failed: disk full" on stderr
/// ```
pub trait TaskOutput {
    /// Writes an error to stderr (the journal); `()` and `Ok(())` write
    /// nothing. [`background`] calls it when the task ends.
    ///
    /// ```
    /// use sausage_plugin::TaskOutput;
    ///
    /// let saved: Result<(), std::io::Error> = Ok(());
    /// saved.report(); // nothing
    /// let failed: Result<(), std::io::Error> = Err(std::io::Error::other("the disk is full"));
    /// failed.report(); // "sausage-plugin: a background task failed: the disk is full" on stderr
    /// ```
    fn report(self);
}

impl TaskOutput for () {
    fn report(self) {}
}

impl<E: Display> TaskOutput for std::result::Result<(), E> {
    fn report(self) {
        if let Err(e) = self {
            eprintln!("sausage-plugin: a background task failed: {e}");
        }
    }
}

/// Whether the core has asked this process to stop: it closed stdin
/// (PROTOCOL 3.6). From then on every call through the core fails at once
/// with an error whose [`Error::is_stopping`] is true, the [`on_stop`] hooks
/// run, and the core kills the process 5 seconds later (calls over an
/// endpoint connection go on until it closes). False outside [`run`] and
/// tests.
///
/// A handler that sees a call fail can ask this to tell "the callee failed"
/// from "this process is stopping" without reading the error's text.
///
/// # Example
///
/// ```no_run
/// use sausage_plugin::{Result, call, stopping};
///
/// /// Calls each worker in turn; stops early when the process is stopping.
/// async fn all(workers: &[&str]) -> Result<usize> {
///     let mut done = 0;
///     for w in workers {
///         if let Err(e) = call(&format!("{w}.run"), ()).await {
///             if stopping() {
///                 return Err(e); // the caller will not read the answer: end now
///             }
///             eprintln!("{w} failed: {e}");
///         } else {
///             done += 1;
///         }
///     }
///     Ok(done)
/// }
/// ```
pub fn stopping() -> bool {
    current().is_some_and(|rt| rt.eof.get())
}

/// Registers a stop hook: it runs when the core stops the process (EOF on
/// stdin, PROTOCOL 3.6).
///
/// A hook can still write files and send notifications, but it cannot make
/// calls, because no answer can arrive. The core kills the process 5 seconds
/// after it closed stdin, so keep hooks short. Hooks run in the order they
/// were registered; they do not run when the process ends by itself.
///
/// # Example
///
/// ```no_run
/// use sausage_plugin::{on_stop, write_atomic};
///
/// on_stop(|| async {
///     let _ = write_atomic("/state/www/stopped", b"yes");
/// });
/// ```
pub fn on_stop<F, Fut>(hook: F)
where
    F: FnOnce() -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    STOP_HOOKS.with(|h| h.borrow_mut().push(Box::new(move || Box::pin(hook()))));
}
