//go:build !linux

package store

import "time"

// setUserTimeout does nothing where TCP_USER_TIMEOUT does not exist: the
// keepalives alone notice a silent server there, on idle connections.
func setUserTimeout(uintptr, time.Duration) error { return nil }
