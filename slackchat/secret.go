package slackchat

import "github.com/runbot/runbot/internal/secret"

// SecretRef says where a secret comes from (see secret.Ref).
type SecretRef = secret.Ref

// Secret is a loaded secret that refuses to be printed (see secret.Value).
type Secret = secret.Value
