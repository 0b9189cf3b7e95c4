package main

import "github.com/runbot/runbot/internal/syncbuf"

// syncBuffer collects a child process's output while the test reads it:
// the one concurrency-safe test buffer, under the name these tests use.
type syncBuffer = syncbuf.Buffer
