package shared

import (
	"context"

	"github.com/stratum-go/stratum/engine/config"
)

// Stage says which part of DefaultSettings failed: the home directory
// (nothing to do with what the user wrote) or the settings themselves (a
// config file, STRATUM_STORE_TIMEOUT …), so the CLI can tell a failure from
// a usage error.
type Stage int

// Stages of DefaultSettings.
const (
	StageHome Stage = iota
	StageSettings
)

// SettingsError is an error of DefaultSettings, with its stage.
type SettingsError struct {
	Stage Stage
	Err   error
}

// Error is the cause's message.
func (e *SettingsError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *SettingsError) Unwrap() error { return e.Err }

// DefaultSettings are the store settings of the working directory, exactly
// as every stratum command reads them: STRATUM_HOME (else ~/.stratum), the
// config files (cfg: $STRATUM_HOME/config.yaml, then .stratum/config.yaml,
// as config.Load(".") reads them) and the environment over them (FromEnv).
// It is the one place this rule lives: main.go and OpenDefault use it.
func DefaultSettings(cfg config.Config) (Settings, error) {
	home, err := config.Home()
	if err != nil {
		return Settings{}, &SettingsError{StageHome, err}
	}
	s, err := FromEnv(home, cfg, nil)
	if err != nil {
		return s, &SettingsError{StageSettings, err}
	}
	return s, nil
}

// OpenDefault opens exactly the store a stratum command started in the
// same directory with the same environment would open: STRATUM_STORE, else
// the config files' store:, else $STRATUM_HOME/stratum.db. A Go program
// that passes it to the library (stratum.Options.Store) has its flows and
// reviews in `stratum tui`, `stratum query` and `stratum gate`. Close it
// when the program is done.
//
// An etcd:// setting needs team mode linked into the program (a blank
// import of store/team); without it OpenDefault says so.
func OpenDefault(ctx context.Context) (*Opened, error) {
	cfg, err := config.Load(".")
	if err != nil {
		return nil, err
	}
	s, err := DefaultSettings(cfg)
	if err != nil {
		return nil, err
	}
	return Open(ctx, s)
}
