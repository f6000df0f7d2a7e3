package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratum-go/stratum/store/backend"
)

// ---- store: inspection and migration between backends ----

func (a *app) storeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Inspect the store, or copy it to another (bbolt file ⇄ etcd)",
		Long: `The store holds every flow, the event log and the result cache: the bbolt file
$STRATUM_HOME/stratum.db, or an etcd cluster when STRATUM_STORE (or store: in config.yaml) is
etcd://HOST:PORT[,HOST:PORT…]/PREFIX. See README, "Team mode".`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.storeInfoCommand(), a.storeCopyCommand())
	return cmd
}

// storeInfo is what stratum store info prints.
type storeInfo struct {
	Backend   string   `json:"backend"`
	Path      string   `json:"path,omitempty"`
	Endpoints []string `json:"endpoints,omitempty"`
	Prefix    string   `json:"prefix,omitempty"`
	Schema    int      `json:"schema_version"`
	backend.Counts
}

func (a *app) storeInfoCommand() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Print the backend, its endpoints or path, schema version and counts",
		Long: `Info opens the store the settings select (STRATUM_STORE, store: in config.yaml, else
$STRATUM_HOME/stratum.db) and prints the backend, its path or endpoints and prefix, the schema
version, and how many flows (by status), pending gates, events and cache entries it holds.
Credentials are never printed.`,
		Example: "  stratum store info\n  STRATUM_STORE=etcd://127.0.0.1:2379/team stratum store info --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			info, err := describeStore(cmd.Context(), st)
			if err != nil {
				return failErr(err)
			}
			if jsonOut {
				return writeJSON(a.stdout, info)
			}
			w := a.stdout
			fmt.Fprintf(w, "backend:        %s\n", info.Backend)
			if info.Path != "" {
				fmt.Fprintf(w, "path:           %s\n", info.Path)
			} else {
				fmt.Fprintf(w, "endpoints:      %s\nprefix:         %s\n", strings.Join(info.Endpoints, ","), info.Prefix)
			}
			fmt.Fprintf(w, "schema version: %d\nflows:          %d", info.Schema, info.Flows)
			for _, s := range slices.Sorted(maps.Keys(info.ByStatus)) {
				fmt.Fprintf(w, " · %s %d", s, info.ByStatus[s])
			}
			fmt.Fprintf(w, "\npending gates:  %d\nevents:         %d (last sequence %d)\ncache entries:  %d\n",
				info.Gates, info.Events, info.LastSeq, info.Cache)
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

func describeStore(ctx context.Context, st *backend.Opened) (storeInfo, error) {
	info := storeInfo{Backend: st.Location.Kind}
	if st.Location.Kind == backend.KindBbolt {
		info.Path = st.Location.Path
	} else {
		info.Endpoints, info.Prefix = st.Location.Endpoints, st.Location.Prefix
	}
	var err error
	if info.Schema, err = st.SchemaVersion(ctx); err != nil {
		return info, err
	}
	info.Counts, err = st.Count(ctx)
	return info, err
}

func (a *app) storeCopyCommand() *cobra.Command {
	var from, to string
	var force bool
	cmd := &cobra.Command{
		Use:   "copy --from SRC --to DST [--force]",
		Short: "Copy flows, events and the cache from one store to another",
		Long: `Copy copies every flow (with its summary, times and version), the event log (in order;
the destination numbers events afresh) and the result cache from SRC to DST. Each is a bbolt
file path or etcd://HOST:PORT[,HOST:PORT…]/PREFIX; TLS and credentials come from the same
settings as for every command (STRATUM_ETCD_*, etcd: in config.yaml). A destination that
holds flows or events is refused unless --force: then each flow of SRC is replaced in DST
(its events too), so copying again gives the same result. Stop the writers of SRC first:
flows changed during the copy may be copied as they were before.`,
		Example: `  stratum store copy --from ~/.stratum/stratum.db --to etcd://10.0.0.5:2379/team
  stratum store copy --from etcd://10.0.0.5:2379/team --to backup.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return usageErr("store copy needs --from SRC and --to DST")
			}
			settings, err := storeSettings()
			if err != nil {
				return err
			}
			srcLoc, err := backend.Parse(from)
			if err != nil {
				return usageErr("--from: %v", err)
			}
			dstLoc, err := backend.Parse(to)
			if err != nil {
				return usageErr("--to: %v", err)
			}
			if srcLoc.String() == dstLoc.String() {
				return usageErr("--from and --to are the same store")
			}
			ctx := cmd.Context()
			src, err := backend.OpenAt(ctx, srcLoc, settings)
			if err != nil {
				return failErr(err)
			}
			defer src.Close()
			clock := &backend.FixedClock{}
			settings.Now = clock.Now
			dst, err := backend.OpenAt(ctx, dstLoc, settings)
			if err != nil {
				return failErr(err)
			}
			defer dst.Close()
			n, err := backend.Copy(ctx, src, dst, clock, force)
			if errors.Is(err, backend.ErrNotEmpty) {
				return &exitError{code: exitFailure, err: err}
			}
			if err != nil {
				return failErr(fmt.Errorf("%v (copied so far: %d flows, %d events, %d cache entries; run again with --force to finish)", err, n.Flows, n.Events, n.Cache))
			}
			return writeJSON(a.stdout, map[string]any{"from": src.Name(), "to": dst.Name(), "flows": n.Flows, "events": n.Events, "cache_entries": n.Cache})
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "source store: a bbolt path or etcd://HOST:PORT[,…]/PREFIX")
	cmd.Flags().StringVar(&to, "to", "", "destination store, same forms")
	cmd.Flags().BoolVar(&force, "force", false, "replace the flows the destination shares with the source")
	return cmd
}
