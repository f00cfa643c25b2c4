//! A test plugin for the SDK: each method exercises one behaviour of the
//! runtime under the real host (`sdk/sdk_test.ts` installs it as `probe`).

use std::cell::RefCell;
use std::future::{Future, IntoFuture, poll_fn};
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;

use sausage_plugin::serde_json::json;
use sausage_plugin::wstd::future::FutureExt as _;
use sausage_plugin::{
    Ctx, Error, Result, Retired, background, call, lock, on_retired, on_stop, pid, rpc, schema, write_atomic, wstd,
};

/// The probe.
struct Probe;

/// A text.
#[schema]
struct Text {
    /// The text.
    text: String,
}

/// A time.
#[schema]
struct Millis {
    /// Milliseconds.
    ms: u64,
}

/// A time and a file.
#[schema]
struct Later {
    /// Milliseconds before the file is written.
    ms: u64,
    /// The file to write.
    file: String,
}

/// A file.
#[schema]
struct File {
    /// The path of the file.
    file: String,
}

/// A text for a file.
#[schema]
struct Write {
    /// The path of the file.
    file: String,
    /// Its new content.
    text: String,
}

/// A number.
#[schema]
struct Count {
    /// How many.
    n: u32,
}

/// What `relay` saw.
#[schema]
struct Relayed {
    /// The names of the notifications, in order.
    names: Vec<String>,
    /// The result of the call.
    result: u32,
}

/// A lock and a time.
#[schema]
struct PathFor {
    /// The path of the lock.
    path: String,
    /// Milliseconds.
    ms: u64,
}

async fn sleep(ms: u64) {
    wstd::task::sleep(wstd::time::Duration::from_millis(ms)).await;
}

/// Waits for all futures; the results in their order.
async fn join_all<T>(mut futures: Vec<Pin<Box<dyn Future<Output = T>>>>) -> Vec<T> {
    let mut results: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        for (future, slot) in futures.iter_mut().zip(results.iter_mut()) {
            if slot.is_none()
                && let Poll::Ready(value) = future.as_mut().poll(cx)
            {
                *slot = Some(value);
            }
        }
        if results.iter().all(Option::is_some) { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    results.into_iter().map(Option::unwrap).collect()
}

#[rpc]
impl Probe {
    /// Return the text.
    fn echo(&self, Text { text }: Text) -> Result<String> {
        Ok(text)
    }

    /// Sleep, then answer the time slept.
    async fn sleep(&self, Millis { ms }: Millis) -> Result<u64> {
        sleep(ms).await;
        Ok(ms)
    }

    /// Answer at once; a background task writes the file later.
    fn later(&self, Later { ms, file }: Later) -> Result<String> {
        background(async move {
            sleep(ms).await;
            write_atomic(&file, "done")
        });
        Ok(pid())
    }

    /// Answer, then live until stopped; the stop hook writes the file.
    fn linger(&self, File { file }: File) -> Result<String> {
        on_stop(move || async move {
            let _ = write_atomic(&file, "stopped");
        });
        background(std::future::pending::<()>());
        Ok(pid())
    }

    /// Answer and end, although a background task still runs.
    fn quit(&self, ctx: &Ctx) -> Result<String> {
        background(std::future::pending::<()>());
        ctx.exit_after_response();
        Ok(pid())
    }

    /// Send `n` notifications `step`, then answer `n`.
    async fn progress(&self, ctx: &Ctx, Count { n }: Count) -> Result<u32> {
        for i in 0..n {
            ctx.notify("step", json!({"i": i}));
            sleep(1).await;
        }
        Ok(n)
    }

    /// Call `probe.progress` and collect the names of its notifications.
    async fn relay(&self, Count { n }: Count) -> Result<Relayed> {
        let names = Rc::new(RefCell::new(Vec::new()));
        let seen = names.clone();
        let result: u32 = call("probe.progress", json!({"n": n}))
            .on_notify(move |name, _| seen.borrow_mut().push(name.to_owned()))
            .returning()
            .await?;
        let names = names.borrow().clone();
        Ok(Relayed { names, result })
    }

    /// Start `probe.linger` detached and return its process ID.
    async fn spawn(&self, File { file }: File) -> Result<String> {
        call("probe.linger", json!({"file": file})).detach().returning().await
    }

    /// Make `n` calls to `probe.echo` at the same time.
    async fn fanout(&self, Count { n }: Count) -> Result<Vec<String>> {
        let calls = (0..n)
            .map(|i| call("probe.echo", json!({"text": i.to_string()})).returning::<String>().into_future())
            .collect();
        join_all(calls).await.into_iter().collect()
    }

    /// Hold the lock for a time.
    async fn hold(&self, PathFor { path, ms }: PathFor) -> Result<()> {
        let _guard = lock(&path).await?;
        sleep(ms).await;
        Ok(())
    }

    /// Give up an acquisition after `ms`, then take the lock again: the
    /// second acquisition waits behind the first, so it gets the lock only
    /// if the SDK released the grant of the abandoned one.
    async fn abandon(&self, PathFor { path, ms }: PathFor) -> Result<bool> {
        let gave_up = lock(&path).into_future().timeout(wstd::time::Duration::from_millis(ms)).await.is_err();
        let _guard = lock(&path).await?;
        Ok(gave_up)
    }

    /// Take the lock if it is free.
    async fn try_lock(&self, PathFor { path, .. }: PathFor) -> Result<bool> {
        Ok(lock(&path).try_now().await?.is_some())
    }

    /// Wait for an answer that cannot come before stdin closes; log its error.
    async fn stranded(&self) -> Result<()> {
        let answer = call("probe.sleep", json!({"ms": 60_000})).await;
        eprintln!("stranded: {answer:?}");
        answer.map(|_| ())
    }

    /// Read a file (also in `/run` and `/self`, which only processes see).
    fn read(&self, File { file }: File) -> Result<String> {
        Ok(std::fs::read_to_string(file)?)
    }

    /// Write a file in one atomic step.
    fn write(&self, Write { file, text }: Write) -> Result<()> {
        Ok(write_atomic(file, text)?)
    }

    /// Fail with the code 4711 and data.
    fn fail(&self) -> Result<()> {
        Err(Error::with_code(4711, "failed on purpose").with_data(json!({"why": "a test"})))
    }

    /// Answer `rpc.retired` with the hash of the retired version.
    #[on_retired]
    fn retired(&self, Retired { previous }: Retired) -> Result<String> {
        Ok(format!("retired {previous}"))
    }

    /// Print noise without a newline, then answer.
    fn noise(&self) -> Result<String> {
        print!("noise without a newline");
        Ok("after noise".into())
    }
}

fn main() {
    sausage_plugin::run(Probe);
}
