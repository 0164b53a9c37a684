//! A blocking API over the same engine, for synchronous Rust, the C ABI and Python. Every
//! call runs on the shared runtime ([`crate::runtime`]) and blocks the calling thread.
//! Calls from inside a tokio runtime thread are refused with `InvalidArgument` (they would
//! deadlock); use the async API there.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::{CancelToken, ClientBuilder, LockOptions, LostSignal, Report};

fn block_on<F: Future>(f: F) -> Result<F::Output> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::invalid(
            "a blocking quorumlock call was made on an async runtime thread; use the async API",
        ));
    }
    Ok(crate::runtime::handle()?.block_on(f))
}

/// Blocking counterpart of [`crate::Client`].
#[derive(Clone, Debug)]
pub struct Client {
    inner: crate::Client,
}

impl Client {
    /// Connects with default settings; see [`crate::ClientBuilder::connect`].
    ///
    /// # Errors
    /// As [`crate::ClientBuilder::connect`].
    pub fn connect<I, S>(urls: I) -> Result<Client>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::from_builder(crate::Client::builder().nodes(urls))
    }

    /// Connects from a builder; blocks up to its connect timeout.
    ///
    /// # Errors
    /// As [`crate::ClientBuilder::connect`].
    pub fn from_builder(builder: ClientBuilder) -> Result<Client> {
        let handle = crate::runtime::handle()?;
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(Error::invalid(
                "a blocking quorumlock call was made on an async runtime thread; use the async API",
            ));
        }
        // Connect on the shared runtime so the client's background tasks live there.
        let inner = handle.block_on(async move { builder.connect().await })?;
        Ok(Client { inner })
    }

    /// The async client behind this one.
    pub fn as_async(&self) -> &crate::Client {
        &self.inner
    }

    /// Blocking [`crate::Client::ping`]: one round of `PING` and the connection probe's
    /// findings per node.
    ///
    /// # Errors
    /// As [`crate::Client::ping`], plus `InvalidArgument` on an async runtime thread.
    pub fn ping(&self) -> Result<Vec<crate::NodeInfo>> {
        block_on(self.inner.ping())?
    }

    /// Blocking [`crate::Client::inspect`]: who holds `resource` on each node.
    ///
    /// # Errors
    /// As [`crate::Client::inspect`], plus `InvalidArgument` on an async runtime thread.
    pub fn inspect(&self, resource: impl AsRef<[u8]>) -> Result<crate::Inspection> {
        block_on(self.inner.inspect(resource))?
    }

    /// Blocking [`crate::Client::extend_value`]: extends the keys that hold `value`.
    ///
    /// # Errors
    /// As [`crate::Client::extend_value`], plus `InvalidArgument` on an async runtime thread.
    pub fn extend_value<I, R>(&self, resources: I, value: &str, ttl: Duration) -> Result<Duration>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u8]>,
    {
        block_on(self.inner.extend_value(resources, value, ttl))?
    }

    /// Blocking [`crate::Client::release_value`]: releases the keys that hold `value`.
    ///
    /// # Errors
    /// As [`crate::Client::release_value`], plus `InvalidArgument` on an async runtime thread.
    pub fn release_value<I, R>(&self, resources: I, value: &str) -> Result<Report>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u8]>,
    {
        block_on(self.inner.release_value(resources, value))?
    }

    /// [`crate::Client::metrics`]: a snapshot of the counters (never blocks).
    pub fn metrics(&self) -> crate::Metrics {
        self.inner.metrics()
    }

    /// Blocking [`crate::Client::acquire`].
    ///
    /// # Errors
    /// As [`crate::Client::acquire_with`].
    pub fn acquire<I, R>(&self, resources: I) -> Result<Lock>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u8]>,
    {
        self.acquire_with(resources, self.inner.lock_options())
    }

    /// Blocking [`crate::Client::acquire_with`].
    ///
    /// # Errors
    /// As [`crate::Client::acquire_with`].
    pub fn acquire_with<I, R>(&self, resources: I, opts: &LockOptions) -> Result<Lock>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u8]>,
    {
        self.acquire_cancellable(resources, opts, &CancelToken::new())
    }

    /// Blocking [`crate::Client::acquire_cancellable`]: another thread may cancel the wait
    /// with `cancel`.
    ///
    /// # Errors
    /// As [`crate::Client::acquire_cancellable`].
    pub fn acquire_cancellable<I, R>(
        &self,
        resources: I,
        opts: &LockOptions,
        cancel: &CancelToken,
    ) -> Result<Lock>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u8]>,
    {
        let resources: Vec<Vec<u8>> = resources.into_iter().map(|r| r.as_ref().to_vec()).collect();
        let inner = block_on(self.inner.acquire_cancellable(resources, opts, cancel))??;
        Ok(Lock { inner })
    }
}

/// Blocking counterpart of [`crate::Lock`]; released in the background when dropped.
#[derive(Debug)]
#[must_use = "a lock is released when dropped"]
pub struct Lock {
    inner: crate::Lock,
}

impl Lock {
    /// The async lock behind this one (value, resources, validity, ...).
    pub fn as_async(&self) -> &crate::Lock {
        &self.inner
    }
    /// Validity left now.
    pub fn remaining(&self) -> Duration {
        self.inner.remaining()
    }
    /// The lock value.
    pub fn value(&self) -> &str {
        self.inner.value()
    }
    /// The lost signal.
    pub fn lost_signal(&self) -> LostSignal {
        self.inner.lost_signal()
    }

    /// Blocking [`crate::Lock::extend`].
    ///
    /// # Errors
    /// As [`crate::Lock::extend`].
    pub fn extend(&self, ttl: Duration) -> Result<()> {
        block_on(self.inner.extend(ttl))?
    }

    /// Blocking [`crate::Lock::release`].
    ///
    /// # Errors
    /// As [`crate::Lock::release`].
    pub fn release(&self) -> Result<Report> {
        block_on(self.inner.release())?
    }
}
