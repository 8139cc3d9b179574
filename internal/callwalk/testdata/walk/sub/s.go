// Package sub is a second package of the test module.
package sub

// F is reached from Root.
func F() string { return "" }

// G is reached only from the second root.
func G() {}
