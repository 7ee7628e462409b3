// rs_names.rs - the Rust target of tests/integration/rust_names: threads
// blocked in a Mutex (t_mutex), a channel recv (t_recv), a generic
// function's sleep (t_generic), in a Drop that runs while a panic unwinds
// (t_panic) and in the panic hook, inside std::panicking (t_hook). Prints
// "ready N" (N: the process's threads) once they are all started, then
// sleeps until killed. Built by the test with rustc at -O0 and -O, legacy
// and v0 mangling, with and without -g.
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

pub struct Server {
    lock: Mutex<u32>,
}

impl Server {
    #[inline(never)]
    pub fn wait_on(&self) -> u32 {
        *self.lock.lock().unwrap()
    }
}

#[inline(never)]
pub fn generic_sleep<T: Default>(x: T) -> T {
    thread::sleep(Duration::from_secs(3600));
    x
}

struct Blocker;

impl Drop for Blocker {
    #[inline(never)]
    fn drop(&mut self) {
        if thread::panicking() {
            thread::sleep(Duration::from_secs(3600));
        }
    }
}

#[inline(never)]
fn panicker() {
    let _b = Blocker;
    panic!("unwinding through a blocking Drop");
}

#[inline(never)]
fn hook_panicker() {
    panic!("stopped in the panic hook");
}

fn spawn<F: FnOnce() -> u32 + Send + 'static>(name: &str, f: F) -> thread::JoinHandle<u32> {
    thread::Builder::new().name(name.into()).spawn(f).unwrap()
}

fn main() {
    std::panic::set_hook(Box::new(|_| {
        if thread::current().name() == Some("t_hook") {
            thread::sleep(Duration::from_secs(3600));
        }
    }));
    let server = Arc::new(Server { lock: Mutex::new(7) });
    let guard = server.lock.lock().unwrap();
    let s2 = Arc::clone(&server);
    let (tx, rx) = mpsc::channel::<u32>();
    let threads = vec![
        spawn("t_mutex", move || s2.wait_on()),
        spawn("t_recv", move || rx.recv().unwrap_or(0)),
        spawn("t_generic", || generic_sleep(Vec::<u8>::new()).len() as u32),
        spawn("t_panic", || { panicker(); 0 }),
        spawn("t_hook", || { hook_panicker(); 0 }),
    ];
    println!("ready {}", threads.len() + 1);
    thread::sleep(Duration::from_secs(3600));
    drop(guard);
    drop(tx);
    for t in threads {
        let _ = t.join();
    }
}
