package store

// WithLocalClock is withLocalClock for the package's external tests: it
// plays a host whose clock is off.
var WithLocalClock = withLocalClock
