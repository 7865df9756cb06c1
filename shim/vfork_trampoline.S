/* vfork cannot be wrapped by a C function: the child returns through the wrapper's frame and
 * then the parent returns through the same, now clobbered, frame. This trampoline calls the
 * recorder first, then jumps to libc's vfork with the stack exactly as the caller left it. */
#if defined(__x86_64__)
        .text
        .globl  vfork
        .type   vfork, @function
vfork:
#ifdef __CET__
        endbr64
#endif
        subq    $8, %rsp            /* 16-byte alignment for the call */
        call    rdzv_prepare_vfork
        addq    $8, %rsp
        jmp     *%rax
        .size   vfork, .-vfork
#elif defined(__aarch64__)
        .text
        .globl  vfork
        .type   vfork, %function
vfork:
        stp     x29, x30, [sp, #-16]!
        mov     x29, sp
        bl      rdzv_prepare_vfork
        ldp     x29, x30, [sp], #16
        br      x0
        .size   vfork, .-vfork
#endif
        .section .note.GNU-stack,"",%progbits
