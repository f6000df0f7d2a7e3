// Package shared opens the shared store: the one every stratum command
// started in the same directory with the same environment opens, where
// `stratum tui`, `stratum query` and `stratum gate` see flows and reviews.
// A Go program using the library (engine/stratum) opens it here and passes
// it as stratum.Options.Store:
//
//	st, err := shared.OpenDefault(ctx)
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//	rt, err := stratum.New(stratum.Options{Store: st})
//
// Where the store is (the one rule every command follows): STRATUM_STORE,
// else the config files' store: ($STRATUM_HOME/config.yaml, then
// .stratum/config.yaml), else the bbolt file $STRATUM_HOME/stratum.db
// (STRATUM_HOME defaults to ~/.stratum). OpenDefault and DefaultSettings
// apply it; Open takes explicit Settings.
//
// This package links the bbolt store and no etcd client, gRPC or zap. An
// etcd:// setting (team mode, store/TEAM.md) needs one more import, which
// registers the etcd opener:
//
//	import _ "github.com/stratum-go/stratum/store/team"
//
// Without it, opening an etcd:// store fails with an error that names the
// import. The stratum command links both. Nor does it link the spec
// parser or its expression compiler: Settings.ParseSpec (the stratum
// command's exprlang.ParseSpec) is what the bbolt store's oldest migration
// parses stored specs with; a program leaves it nil.
//
// For programs, OpenDefault, Open, Settings and the Name and Close methods
// of what they return are promised; the methods of the store itself
// (engine.Store) are not: they serve the library and the command.
//
// Settings, the environment over the config files (as for the other
// settings: STRATUM_MODEL over default_model):
//
//	STRATUM_STORE          store:            a bbolt path or etcd://HOST:PORT[,HOST:PORT…]/PREFIX
//	STRATUM_STORE_TIMEOUT  store_timeout:    bound of each store call (etcd; default 5s)
//	STRATUM_ETCD_CERT      etcd: cert:       client certificate (PEM)
//	STRATUM_ETCD_KEY       etcd: key:        its key (PEM)
//	STRATUM_ETCD_CA        etcd: ca:         CA of the members' certificates (PEM)
//	STRATUM_ETCD_USER      etcd: user:       etcd user
//	STRATUM_ETCD_PASSWORD  etcd: password:   its password
//	STRATUM_ETCD_INSECURE  etcd: insecure:   1/true: allow plain TCP to a non-loopback endpoint
//
// TLS is used when any of cert/key/ca is set (etcds:// also asks for it
// with the system's CAs). Plain TCP to an endpoint that is not loopback is
// refused unless insecure is set: etcd credentials and every flow would
// cross the network in clear.
package shared
