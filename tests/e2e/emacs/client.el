;; Drives the Citeline client in Emacs (batch) as a user would, over the real server:
;; the root rules (a file outside any marked folder starts nothing; a file under one
;; serves that folder; the user's own eglot server for Markdown keeps its buffers),
;; M-x citeline-ask with its grade, citeline-copy-answer onto the kill ring,
;; citeline-history and reopening an entry, a PDF citation opened at its page,
;; citeline-reindex, citeline-index-folder, citeline-pause and citeline-resume.
;; Writes what it saw as JSON.
(package-initialize)
(require 'json)
(add-to-list 'load-path (getenv "CITELINE_EMACS_CLIENT"))
(require 'citeline)
(setq citeline-server-command (list (getenv "CITELINE_PYTHON") "-m" "citeline.cli" "serve"))
(setq citeline-initialization-options '(:answer (:maxAnswerTokens 48 :timeoutSeconds 600)))
(setq citeline-request-timeout 900)
(setq eglot-server-programs nil)
(citeline-setup)

(defvar citeline-test-result nil)
(defun citeline-test-put (key value)
  (setq citeline-test-result (plist-put citeline-test-result key value)))

(defun citeline-test-finish ()
  (with-temp-file (getenv "CITELINE_TEST_OUT")
    (insert (json-encode citeline-test-result)))
  (kill-emacs 0))

(defun citeline-test-wait (label predicate)
  (let ((deadline (+ (float-time) (string-to-number (getenv "CITELINE_TEST_TIMEOUT")))))
    (while (and (< (float-time) deadline) (not (funcall predicate)))
      (accept-process-output nil 0.05))
    (unless (funcall predicate)
      (error "Timed out waiting for %s" label))))

(defun citeline-test-ready-p ()
  (let ((folders (plist-get citeline-last-status :folders)))
    (and folders (> (length folders) 0)
         (seq-every-p (lambda (f) (equal (plist-get f :state) "ready")) folders))))

(defun citeline-test-lines ()
  (mapcar #'citeline--folder-line (plist-get citeline-last-status :folders)))

(defun citeline-test-file-lines (file)
  (when (file-exists-p file)
    (with-temp-buffer
      (insert-file-contents file)
      (vconcat (split-string (buffer-string) "\n" t)))))

;; The user's own Markdown server, as eglot runs it: a real language server (the
;; test's stand-in is `citeline serve' on another folder, which any LSP server
;; could be), managing markdown buffers of its project.
(define-derived-mode citeline-test-markdown-mode text-mode "MD")
(add-to-list 'auto-mode-alist '("\\.md\\'" . citeline-test-markdown-mode))

(condition-case err
    (let* ((home (file-name-as-directory (getenv "CITELINE_TEST_HOME")))
           (docs (file-name-as-directory (getenv "CITELINE_TEST_DOCS")))
           (other (file-name-as-directory (getenv "CITELINE_TEST_OTHER")))
           (question (getenv "CITELINE_TEST_QUESTION"))
           (closest (getenv "CITELINE_TEST_CLOSEST")))
      ;; A file outside any marked folder: nothing starts.
      (find-file (expand-file-name "notes.md" home))
      (citeline-test-put :plain_root (citeline-root))
      (citeline-test-put :plain_server (and citeline--server t))
      ;; The user's own server manages their Markdown buffers in docs.
      (find-file (expand-file-name "garden.md" docs))
      (let ((user-server (eglot '(citeline-test-markdown-mode) (cons 'transient docs) 'eglot-lsp-server
                                (list (getenv "CITELINE_PYTHON") "-m" "citeline.cli" "serve"
                                      "--docs" (getenv "CITELINE_TEST_USER_DOCS"))
                                "markdown")))
        (citeline-test-put :user_server_started (or (and user-server t) :background))
        (citeline-test-wait "the user's server to manage the buffer"
                            (lambda () (with-current-buffer (get-file-buffer (expand-file-name "garden.md" docs))
                                         (eglot-current-server)))))
      ;; The file under docs started Citeline (find-file-hook), for docs only.
      (citeline-test-put :docs_root (citeline-root))
      (citeline-test-wait "Citeline to start" (lambda () citeline--server))
      (citeline-test-wait "the folder to be ready" #'citeline-test-ready-p)
      (citeline-test-put :folders (vconcat citeline--folders))
      (citeline-test-put :status (vconcat (citeline-test-lines)))
      (with-current-buffer (get-file-buffer (expand-file-name "garden.md" docs))
        (let ((managing (eglot-current-server)))
          (citeline-test-put :buffer_server_is_citeline (and managing (cl-typep managing 'citeline-server) t))
          (citeline-test-put :buffer_server_live (and managing (jsonrpc-running-p managing) t))))

      ;; Ask; the grade and the label above the answer.
      (let ((answer (citeline-ask-and-wait question)))
        (citeline-test-put :answer answer)
        (citeline-test-put :shown (with-current-buffer "*citeline*" (buffer-string))))
      ;; Copy onto the kill ring.
      (citeline-test-put :copied (citeline-copy-answer))
      (citeline-test-put :kill (current-kill 0))

      ;; A question the documents do not answer well.
      (citeline-test-put :closest (citeline-ask-and-wait closest))
      (citeline-test-put :closest_shown (with-current-buffer "*citeline*" (buffer-string)))

      ;; A PDF citation: the plan, then an external viewer on PATH told the page,
      ;; then the system's handler.
      (let* ((hits (plist-get (citeline--request :citeline/search
                                                 (list :query (getenv "CITELINE_TEST_PDF_QUERY") :k 1))
                              :hits))
             (hit (aref hits 0))
             (file (citeline--uri-to-path (plist-get hit :uri))))
        (citeline-test-put :pdf_hit hit)
        (let ((citeline-pdf-viewer 'doc-view))
          (citeline-test-put :plan_doc_view (citeline-pdf-open-plan file (plist-get hit :page))))
        (let ((citeline-pdf-viewer 'pdf-tools))
          (citeline-test-put :plan_pdf_tools (citeline-pdf-open-plan file (plist-get hit :page))))
        (citeline--open hit)
        (citeline-test-put :pdf_opened citeline-last-pdf-open)
        (citeline-test-wait "the viewer" (lambda () (file-exists-p (getenv "CITELINE_TEST_VIEWER_LOG"))))
        (citeline-test-put :viewer_argv (citeline-test-file-lines (getenv "CITELINE_TEST_VIEWER_LOG")))
        (let ((citeline-pdf-viewers nil))
          (citeline--open hit)
          (citeline-test-put :pdf_system citeline-last-pdf-open))
        (citeline-test-wait "xdg-open" (lambda () (file-exists-p (getenv "CITELINE_TEST_OPENER_LOG"))))
        (citeline-test-put :opener_argv (citeline-test-file-lines (getenv "CITELINE_TEST_OPENER_LOG")))
        (citeline-test-put :pdf_buffer (and (get-file-buffer file) t)))

      ;; History, and RET on an entry reopens it.
      (condition-case history-error
          (let ((history (citeline-history)))
            (citeline-test-put :history history)
            (citeline-test-put :history_shown (with-current-buffer "*citeline history*" (buffer-string)))
            (with-current-buffer "*citeline history*"
              (goto-char (point-min))
              (search-forward question)
              (push-button (match-beginning 0)))
            (citeline-test-put :reopened citeline-shown-answer)
            (citeline-test-put :copied_entry (citeline-copy-answer))
            (citeline-test-put :reopened_shown (with-current-buffer "*citeline*" (buffer-string)))
            (citeline-test-put :history_filtered (citeline-history closest)))
        (error (citeline-test-put :history_error (format "%S" history-error))))

      ;; Hover: the passages the sentence at point is about, as a command and in eldoc.
      (with-current-buffer (get-file-buffer (expand-file-name "garden.md" docs))
        (goto-char (point-min))
        (search-forward "Basil grows best")
        (citeline-test-put :hover_mode (and citeline-hover-mode t))
        (citeline-test-put :hover (citeline-hover))
        (let ((shown nil))
          (citeline--eldoc (lambda (text &rest _) (setq shown text)))
          (citeline-test-wait "eldoc" (lambda () shown))
          (citeline-test-put :eldoc shown)))
      ;; citeline doctor, from the documents buffer.
      (with-current-buffer (get-file-buffer (expand-file-name "garden.md" docs))
        (let ((report (citeline-doctor)))
          (citeline-test-put :doctor (plist-put report :checks (vconcat (plist-get report :checks)))))
        (citeline-test-put :doctor_shown (with-current-buffer "*citeline doctor*" (buffer-string))))
      ;; Reindex, and a folder without a marker served on request.
      (citeline-test-put :reindex (citeline-reindex))
      (condition-case index-error
          (progn
            (citeline-test-put :index_folder (citeline-index-folder other))
            (citeline-test-wait "the new folder" (lambda ()
                                                   (seq-find (lambda (f) (and (equal (plist-get f :docs) (directory-file-name other))
                                                                              (equal (plist-get f :state) "ready")))
                                                             (plist-get citeline-last-status :folders)))))
        (error (citeline-test-put :index_folder_error (format "%S" index-error))))
      (citeline-test-put :status_after (vconcat (citeline-test-lines)))
      ;; Pause every folder, then resume one, then the rest.
      (citeline-test-put :paused (citeline-pause))
      (citeline-test-wait "the folders paused"
                          (lambda () (seq-every-p #'citeline--paused-p
                                                  (plist-get citeline-last-status :folders))))
      (citeline-test-put :status_paused (vconcat (citeline-test-lines)))
      (citeline-test-put :resumed (citeline-resume docs))
      (citeline-resume)
      (citeline-test-wait "the folders resumed"
                          (lambda () (not (seq-some #'citeline--paused-p
                                                    (plist-get citeline-last-status :folders)))))
      (citeline-test-put :status_resumed (vconcat (citeline-test-lines)))
      ;; The user's server still manages their Markdown buffer.
      (with-current-buffer (get-file-buffer (expand-file-name "garden.md" docs))
        (let ((managing (eglot-current-server)))
          (citeline-test-put :buffer_server_after_is_citeline (and managing (cl-typep managing 'citeline-server) t))
          (citeline-test-put :buffer_server_after_live (and managing (jsonrpc-running-p managing) t))))
      (citeline-stop)
      (citeline-test-finish))
  (error (citeline-test-put :error (format "%S" err))
         (citeline-test-finish)))
