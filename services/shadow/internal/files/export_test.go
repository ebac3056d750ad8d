package files

// SetHookChecked makes f run between a write's path check and its first
// use; the answer undoes it.
func SetHookChecked(f func(resolved string)) (undo func()) {
	hookChecked = f
	return func() { hookChecked = nil }
}
