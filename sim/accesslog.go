package sim

import (
	"net"
	"net/http"
	"strings"
)

// withAccessLog emits uvicorn's access line for every request when its response
// starts: `INFO:     127.0.0.1:56576 - "GET /health HTTP/1.1" 200 OK`. A request
// that never gets a response (a hung chat completion) leaves no access line, as with
// uvicorn. The simulator's own /_sim/ endpoints are not logged, so they do not
// pollute what an operator greps.
func withAccessLog(log *Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_sim/") {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&accessWriter{ResponseWriter: w, log: log, r: r}, r)
	})
}

type accessWriter struct {
	http.ResponseWriter
	log    *Logger
	r      *http.Request
	logged bool
}

func (a *accessWriter) WriteHeader(code int) {
	if !a.logged {
		a.logged = true
		host, port, err := net.SplitHostPort(a.r.RemoteAddr)
		client := a.r.RemoteAddr
		if err == nil {
			client = host + ":" + port
		}
		a.log.Logf("", "INFO:     %s - \"%s %s %s\" %d %s", client, a.r.Method, a.r.URL.RequestURI(), a.r.Proto, code, http.StatusText(code))
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *accessWriter) Write(b []byte) (int, error) {
	if !a.logged {
		a.WriteHeader(http.StatusOK)
	}
	return a.ResponseWriter.Write(b)
}

func (a *accessWriter) Flush() {
	if !a.logged {
		a.WriteHeader(http.StatusOK)
	}
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (a *accessWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }
