"""The toggles panel (generated from the option table), the text inputs and the small controls."""
