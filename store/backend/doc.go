// Package backend selects and opens the store every command uses: the bbolt
// file (package store) or an etcd cluster (package etcdstore), from
// STRATUM_STORE or the config's store: key. main.go calls Open; nothing
// else of stratum needs to know which backend it is on. The bodies of
// `stratum store info|check|copy` and `gc --damaged` are here too
// (Describe, Check, CopyLocations and CopyStores, QuarantineDamaged),
// with the help texts of store and gc (command_help.go). DefaultSettings
// is the one rule for the settings of the working directory (main.go uses
// it), and OpenDefault opens that store for a Go program using the library
// (engine/stratum), so its flows and reviews are where `stratum tui` and
// `stratum gate` look.
//
// Part of the stratum command, not a public API: its exported names serve
// the command's packages and may change.
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
package backend
