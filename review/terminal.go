package review

import "os"

// IsTerminal reports whether f is an interactive terminal: its descriptor
// answers the terminal ioctl (isatty). A character device is not enough:
// /dev/null and /dev/zero are character devices, and a decision "typed"
// from them is a program's. Front ends use it to fill HumanConfirm.Terminal
// and Console.Terminal.
func IsTerminal(f *os.File) bool {
	return f != nil && isTerminal(f.Fd())
}
