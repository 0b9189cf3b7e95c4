//go:build tools

// Package deps pins modules that later work uses, so that go mod tidy keeps them.
package deps

import (
	_ "github.com/coreos/go-systemd/v22/daemon"
	_ "github.com/coreos/go-systemd/v22/dbus"
	_ "github.com/expr-lang/expr"
	_ "github.com/kevinburke/ssh_config"
	_ "github.com/pmezard/go-difflib/difflib"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/robfig/cron/v3"
	_ "github.com/slack-go/slack"
	_ "github.com/slack-go/slack/slacktest"
	_ "github.com/slack-go/slack/socketmode"
	_ "github.com/spf13/cobra"
	_ "github.com/stretchr/testify/require"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/crypto/ssh"
	_ "golang.org/x/crypto/ssh/agent"
	_ "golang.org/x/crypto/ssh/knownhosts"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/term"
	_ "gonum.org/v1/plot"
	_ "modernc.org/sqlite"
)
