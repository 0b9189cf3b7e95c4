package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/shell"
)

// File is what ReadFile read: the file's first bytes, up to the cap, and
// when it was last modified.
type File struct {
	Data      []byte
	Truncated bool
	// ModTime is the file's modification time, in whole seconds as `stat
	// -c %Y` gives it; zero when the read was not asked for it and the
	// way it was read did not give it anyway.
	ModTime time.Time
}

// FileError says a host answered that a file cannot be read: it does not
// exist, is not a regular file, or the login may not read it. It is an
// answer about the file, not a failure to reach the host.
type FileError struct {
	Host   string
	Path   string
	Reason string
}

func (e *FileError) Error() string { return fmt.Sprintf("read %s on %s: %s", e.Path, e.Host, e.Reason) }

// ErrNoFileReader is what a FileReader returns when it cannot read files
// without a command on this host (the SFTP subsystem is refused, say);
// ReadFile then runs the command.
var ErrNoFileReader = errors.New("the host reads no files without a command")

// FileReader is a Runner that can read a file without starting a process
// for it on the host (SSH's SFTP subsystem: one server process per
// connection, however many files).
type FileReader interface {
	// ReadFile reads up to max bytes of the regular file at path and its
	// modification time, or returns ErrNoFileReader.
	ReadFile(ctx context.Context, path string, max int) (File, error)
}

// FileRead asks ReadFile for one file.
type FileRead struct {
	Path string
	// Max caps the bytes read; 0 means DefaultMaxOutput.
	Max int
	// ModTime asks for the modification time, which the command then reads
	// with stat before cat.
	ModTime bool
	// Command replaces `cat -- PATH` as the command that prints the file
	// when the runner reads none itself (a check keeping the line its
	// recordings hold). It must print the file, or its text, on stdout and
	// exit non-zero when it cannot.
	Command string
}

// ReadFile reads a file on r's host: through r when it is a FileReader
// that can, else with a command (ReadLine). A file the host cannot read is
// a *FileError; any other error means the host was not reached or did not
// answer in time.
func ReadFile(ctx context.Context, r Runner, f FileRead) (File, error) {
	if f.Max <= 0 {
		f.Max = DefaultMaxOutput
	}
	if fr, ok := r.(FileReader); ok {
		got, err := fr.ReadFile(ctx, f.Path, f.Max)
		if !errors.Is(err, ErrNoFileReader) {
			return got, err
		}
	}
	// Room for stat's line before the file's bytes.
	out, err := r.Run(ctx, Command{Line: f.ReadLine(), MaxOutput: f.Max + 32})
	if err != nil {
		return File{}, fmt.Errorf("read %s on %s: %w", f.Path, r.Host(), err)
	}
	if out.ExitCode != 0 {
		reason := strings.TrimSpace(string(out.Stderr))
		if i := strings.IndexByte(reason, '\n'); i >= 0 {
			reason = reason[:i]
		}
		if reason == "" {
			reason = "exit status " + strconv.Itoa(out.ExitCode)
		}
		return File{}, &FileError{Host: r.Host(), Path: f.Path, Reason: reason}
	}
	data := out.Stdout
	if out.StdoutTruncated {
		data = bytes.TrimSuffix(data, []byte(TruncationMarker))
	}
	var file File
	if f.ModTime && f.Command == "" {
		mtime, body, _ := bytes.Cut(data, []byte("\n"))
		data = body
		if secs, err := strconv.ParseInt(strings.TrimSpace(string(mtime)), 10, 64); err == nil {
			file.ModTime = time.Unix(secs, 0).UTC()
		}
	}
	file.Data, file.Truncated = data, out.StdoutTruncated
	if len(data) > f.Max {
		file.Data, file.Truncated = data[:f.Max], true
	}
	return file, nil
}

// ReadLine is the command ReadFile runs when the runner reads no files
// itself, for plans to show.
func (f FileRead) ReadLine() string {
	switch {
	case f.Command != "":
		return f.Command
	case f.ModTime:
		return shell.Join("stat", "-c", "%Y", "--", f.Path) + " && " + shell.Join("cat", "--", f.Path)
	default:
		return shell.Join("cat", "--", f.Path)
	}
}
