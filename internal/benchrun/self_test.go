package benchrun

import "os"

func pidSelf() int { return os.Getpid() }
