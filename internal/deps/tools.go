//go:build tools

// Package deps pins modules that later work uses, so that go mod tidy keeps them.
package deps
import (
 _ "github.com/spf13/cobra"
 _ "github.com/stretchr/testify/require"
 _ "go.yaml.in/yaml/v3"
 _ "github.com/expr-lang/expr"
 _ "golang.org/x/crypto/ssh"
 _ "golang.org/x/crypto/ssh/knownhosts"
 _ "golang.org/x/crypto/ssh/agent"
 _ "github.com/coreos/go-systemd/v22/dbus"
 _ "github.com/coreos/go-systemd/v22/daemon"
 _ "github.com/robfig/cron/v3"
 _ "github.com/prometheus/common/expfmt"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "modernc.org/sqlite"
 _ "github.com/slack-go/slack"
 _ "github.com/slack-go/slack/slacktest"
 _ "github.com/slack-go/slack/socketmode"
 _ "gonum.org/v1/plot"
 _ "github.com/pmezard/go-difflib/difflib"
 _ "golang.org/x/term"
 _ "golang.org/x/sync/errgroup"
 _ "github.com/kevinburke/ssh_config"
)
