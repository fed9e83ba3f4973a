//! The decompressed stream of an archive, metered: every byte gunzip produces is
//! counted against [`Limits`], whatever the tar headers claim.

use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;

use flate2::read::GzDecoder;

use crate::limits::Limits;

/// Which stream limit was exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tripped {
    TooLarge,
    Ratio,
}

/// Tells, after an I/O error, whether it came from a limit rather than bad data.
/// (The tar reader wraps the errors it passes on, so the cause is kept aside.)
#[derive(Debug, Clone, Default)]
pub(crate) struct Tripwire(Rc<Cell<Option<Tripped>>>);

impl Tripwire {
    pub(crate) fn tripped(&self) -> Option<Tripped> {
        self.0.get()
    }
}

/// Counts the compressed bytes gunzip has consumed.
struct CountingSlice<'a> {
    rest: &'a [u8],
    consumed: Rc<Cell<u64>>,
}

impl Read for CountingSlice<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.rest.read(buf)?;
        self.consumed.set(self.consumed.get() + n as u64);
        Ok(n)
    }
}

/// The decompressed bytes of an archive, failing once a limit is exceeded.
pub(crate) struct MeteredGunzip<'a> {
    inner: GzDecoder<CountingSlice<'a>>,
    consumed: Rc<Cell<u64>>,
    produced: u64,
    limits: Limits,
    tripwire: Tripwire,
}

impl<'a> MeteredGunzip<'a> {
    pub(crate) fn new(bytes: &'a [u8], limits: &Limits) -> (Self, Tripwire) {
        let consumed = Rc::new(Cell::new(0));
        let tripwire = Tripwire::default();
        let inner = GzDecoder::new(CountingSlice { rest: bytes, consumed: Rc::clone(&consumed) });
        (MeteredGunzip { inner, consumed, produced: 0, limits: *limits, tripwire: tripwire.clone() }, tripwire)
    }

    fn trip(&self, why: Tripped) -> io::Error {
        self.tripwire.0.set(Some(why));
        io::Error::other(match why {
            Tripped::TooLarge => "archive exceeds the size limit",
            Tripped::Ratio => "archive exceeds the compression ratio limit",
        })
    }
}

impl Read for MeteredGunzip<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(why) = self.tripwire.tripped() {
            return Err(self.trip(why));
        }
        let n = self.inner.read(buf)?;
        self.produced += n as u64;
        if self.produced > self.limits.max_total_bytes {
            return Err(self.trip(Tripped::TooLarge));
        }
        // gunzip reads ahead through its buffer, so `consumed` is never less than
        // what produced the output: the ratio is, if anything, underestimated.
        let consumed = self.consumed.get().max(1);
        if self.produced > self.limits.ratio_grace_bytes
            && self.produced > consumed.saturating_mul(self.limits.max_ratio)
        {
            return Err(self.trip(Tripped::Ratio));
        }
        Ok(n)
    }
}

/// Decompresses all of `bytes` through the meter, for checking an archive without
/// unpacking it.
pub(crate) fn check(bytes: &[u8], limits: &Limits) -> Result<(), (Option<Tripped>, io::Error)> {
    let (mut reader, tripwire) = MeteredGunzip::new(bytes, limits);
    io::copy(&mut reader, &mut io::sink()).map(drop).map_err(|e| (tripwire.tripped(), e))
}
