"""Gates in the shapes gatefix reads; nothing here is meant to be imported for real."""
