// Package contract is the wire contract between Switchyard's two tiers and their clients: every
// request and response header either tier reads or writes, the route and decision-reason values
// with their wire spellings, and the overflow and hand-back signals. It is a leaf: it imports
// only the standard library, and both binaries (cluster-gateway, global-router) and ext_proc
// spell the contract only through it.
package contract
