package llm

import "os"

var osReadFile = os.ReadFile
