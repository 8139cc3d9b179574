//go:build realcluster

package realenv

import "os"

func init() {
	tagged = true
	load(os.Getenv)
}
