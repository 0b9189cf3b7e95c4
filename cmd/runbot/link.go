package main

import (
	"fmt"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/web"
)

// newLinkCmd is `runbot link RUN`: the signed link to a run's report page
// that runbot serve puts in its Slack messages, for an operator without
// Slack.
func newLinkCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "link RUN",
		Short: "Print a signed link to a run's report page, as runbot serve signs the links of its Slack messages",
		Long: "Print a signed link to a run's report page, made with runbot serve's config (--config or\n" +
			"RUNBOT_CONFIG): under web.url, signed with web.link_secret, valid for web.link_ttl. It opens\n" +
			"that run's page only. The run is looked up in serve's store, so a unique prefix of its id will do.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			cfg, err := g.serveConfig("link")
			if err != nil {
				return err
			}
			signer, base, err := linkSigner(cfg)
			if err != nil {
				return err
			}
			st, err := openServedStore(cmd, g, cfg)
			if err != nil {
				return err
			}
			defer closeInto(&err, st)
			run, err := st.GetRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), signer.RunURL(base, run.ID))
			return err
		},
	}
}

// linkSigner is the signer serve makes its links with, from the config's
// web: block, and the site's public address; an error names what of the
// config is missing when it signs no links.
func linkSigner(cfg *config.Config) (*web.Signer, *url.URL, error) {
	key, err := cfg.LinkKey()
	if err != nil {
		return nil, nil, err
	}
	s, err := web.NewSigner([]byte(key.Reveal()), cfg.Web.LinkTTL, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: web.link_secret (%s): %w", cfg.File, cfg.Web.LinkSecret, err)
	}
	return s, cfg.Web.URL, nil
}
