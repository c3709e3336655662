"""The observer's pure domain: seed 002's observation models and the rules that project them."""
