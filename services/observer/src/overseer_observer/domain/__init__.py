"""The observer's pure domain: the observation models and the rules that project them."""
