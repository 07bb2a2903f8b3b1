class CompilationContext:
    def get_nvcc_flags_list(self, supported_major_versions=None):
        return []


current_compilation_context = CompilationContext()
