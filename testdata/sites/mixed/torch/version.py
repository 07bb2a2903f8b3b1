__version__ = '2.9.0'
cuda: Optional[str] = '12.8'
