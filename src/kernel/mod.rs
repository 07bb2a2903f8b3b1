//! What GPU code is really installed: fatbin / cubin / ELF inventory and loadability.
